// Package deploycheck checks what cannot be run here against the code: the
// Dockerfile's build (the same flags give a static binary), and the README's
// configuration table (generated from each command's --help). The
// Kubernetes manifests and docker-compose.yml are checked by the separate
// module in deploy/check (it needs the Kubernetes API types). Tests only.
package deploycheck

import (
	"bufio"
	"fmt"
	"regexp"
	"strings"
)

// Commands are the subcommands whose flags the README documents.
var Commands = []string{"run", "replay", "verify", "gen", "deadletters"}

// Flag is one flag as `lineageflow <command> --help` prints it.
type Flag struct {
	Name, Env, Default, Usage string
}

var flagLine = regexp.MustCompile(`^  -(\S+)  \[(LINEAGEFLOW_[A-Z0-9_]+)\](?: \(default (.*)\))?$`)

// ParseHelp reads the flags of a --help output (internal/cli.Usage's
// format: "  -name  [ENV] (default D)" then the usage on the next line).
func ParseHelp(out string) ([]Flag, error) {
	var flags []Flag
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		if m := flagLine.FindStringSubmatch(line); m != nil {
			flags = append(flags, Flag{Name: m[1], Env: m[2], Default: m[3]})
			continue
		}
		if strings.HasPrefix(line, "      ") && len(flags) > 0 {
			f := &flags[len(flags)-1]
			f.Usage = strings.TrimSpace(f.Usage + " " + strings.TrimSpace(line))
		}
	}
	if len(flags) == 0 {
		return nil, fmt.Errorf("no flags found in help output:\n%s", out)
	}
	return flags, nil
}

// Table renders the README's configuration table of every command.
func Table(byCmd map[string][]Flag) string {
	var b strings.Builder
	for i, cmd := range Commands {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "`lineageflow %s`\n\n| flag | environment variable | default | meaning |\n|---|---|---|---|\n", cmd)
		for _, f := range byCmd[cmd] {
			def := f.Default
			if def == "" {
				def = " "
			} else {
				def = "`" + def + "`"
			}
			fmt.Fprintf(&b, "| `-%s` | `%s` | %s | %s |\n", f.Name, f.Env, def, mdEscape(f.Usage))
		}
	}
	return b.String()
}

// mdEscape keeps a usage text literal inside a Markdown table cell.
func mdEscape(s string) string {
	return strings.NewReplacer("|", `\|`, "<", "&lt;", ">", "&gt;").Replace(s)
}
