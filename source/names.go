package source

import (
	"fmt"
	"regexp"
)

// Names checked at start, by the rules Kinesis and DynamoDB apply, so a bad
// one fails before any AWS call with a message naming the flag and the rule
// (instead of a ValidationException from the first DescribeTable).

var streamNameRE = regexp.MustCompile(`^[a-zA-Z0-9_.-]{1,128}$`)

// ValidateStreamName says what is wrong with a Kinesis stream name
// (1 to 128 characters of a-z, A-Z, 0-9, '_', '.', '-'); flag names the
// flag that set it.
func ValidateStreamName(flag, name string) error {
	if name == "" {
		return fmt.Errorf("%s is required: the Kinesis stream name", flag)
	}
	if !streamNameRE.MatchString(name) {
		return fmt.Errorf("%s %q: a Kinesis stream name is 1 to 128 characters of a-z, A-Z, 0-9, '_', '.' and '-'", flag, name)
	}
	return nil
}

// ValidateAppName says what is wrong with a KCL application name: it names
// the lease table (<app>) and the handoff table (<app>-handoff), so it
// follows DynamoDB's table name rule (3 to 255 characters of a-z, A-Z,
// 0-9, '_', '-', '.') with room for the suffix.
func ValidateAppName(flag, name string) error {
	if !tableNameRE.MatchString(name) || len(name) > 255-len("-handoff") {
		return fmt.Errorf("%s %q: it names DynamoDB tables (<app> and <app>-handoff), so it must be 3 to %d characters of a-z, A-Z, 0-9, '_', '-' and '.'", flag, name, 255-len("-handoff"))
	}
	return nil
}
