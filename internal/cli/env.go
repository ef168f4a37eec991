// Package cli holds the small pieces every subcommand shares: flags that
// fall back to environment variables.
package cli

import (
	"flag"
	"fmt"
	"os"
	"strings"
)

// EnvName is the environment variable of a flag: LINEAGEFLOW_ + the flag
// name in upper case with '-' as '_' (shard-count -> LINEAGEFLOW_SHARD_COUNT).
func EnvName(flagName string) string {
	return "LINEAGEFLOW_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// Parse parses args into fs, then sets every flag not given on the command
// line from its environment variable, if set. A bad value in either place is
// an error that names the flag and the variable.
func Parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if err != nil || given[f.Name] {
			return
		}
		v, ok := os.LookupEnv(EnvName(f.Name))
		if !ok {
			return
		}
		// f.Value.Set, not fs.Set: fs.Set would mark the flag as given,
		// and fs.Visit (OnCommandLine) could no longer tell a value from
		// the environment from one on the command line.
		if e := f.Value.Set(v); e != nil {
			err = fmt.Errorf("environment variable %s=%q (flag -%s): %w", EnvName(f.Name), v, f.Name, e)
		}
	})
	return err
}

// Usage returns a flag.FlagSet Usage func that prints a summary line and
// every flag with its environment variable.
func Usage(fs *flag.FlagSet, synopsis, summary string) func() {
	return func() {
		w := fs.Output()
		fmt.Fprintf(w, "Usage: %s\n\n%s\n\nFlags (each also read from its environment variable):\n", synopsis, summary)
		fs.VisitAll(func(f *flag.Flag) {
			def := ""
			if f.DefValue != "" {
				def = fmt.Sprintf(" (default %s)", f.DefValue)
			}
			fmt.Fprintf(w, "  -%s  [%s]%s\n      %s\n", f.Name, EnvName(f.Name), def, f.Usage)
		})
	}
}

// OnCommandLine reports whether flag name was given on the command line
// (not from its environment variable). Call it after [Parse].
func OnCommandLine(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

// SecretFlagWarning is the warning for a secret given on the command line
// (readable by any local user in /proc/<pid>/cmdline and in `ps`), or ""
// when flag name was not given there.
func SecretFlagWarning(fs *flag.FlagSet, name string) string {
	if !OnCommandLine(fs, name) {
		return ""
	}
	return fmt.Sprintf("-%s on the command line is readable by any local user (ps, /proc/<pid>/cmdline): set %s in the environment instead, or use the AWS default credential chain", name, EnvName(name))
}
