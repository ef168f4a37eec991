package source

import (
	"strings"
	"testing"
)

func TestValidateNames(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		stream, app string
		want        string // "" valid
	}{
		{"lineage", "lineageflow", ""},
		{"a", "abc", ""},
		{"lineage", "ux", "-app \"ux\": it names DynamoDB tables"},
		{"lineage", "my app", "3 to 247 characters"},
		{"lineage", strings.Repeat("a", 248), "-app"},
		{"", "lineageflow", "-stream is required"},
		{"lineage/x", "lineageflow", "-stream"},
		{strings.Repeat("s", 129), "lineageflow", "-stream"},
	} {
		err := ValidateStreamName("-stream", tt.stream)
		if err == nil {
			err = ValidateAppName("-app", tt.app)
		}
		if (err == nil) != (tt.want == "") || (err != nil && !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("stream %q app %q: %v, want %q", tt.stream, tt.app, err, tt.want)
		}
	}
}
