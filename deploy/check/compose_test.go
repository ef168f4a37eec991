package check

import (
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// compose is the part of the Compose specification this file uses; strict
// decoding refuses any key outside it (a typo, or a feature to add here).
type compose struct {
	Name     string                    `json:"name"`
	Services map[string]composeService `json:"services"`
	Volumes  map[string]any            `json:"volumes"`
}

type composeService struct {
	Image       string               `json:"image"`
	Build       string               `json:"build"`
	Command     []string             `json:"command"`
	Entrypoint  []string             `json:"entrypoint"`
	WorkingDir  string               `json:"working_dir"`
	Environment map[string]string    `json:"environment"`
	Ports       []string             `json:"ports"`
	Volumes     []string             `json:"volumes"`
	DependsOn   map[string]dependsOn `json:"depends_on"`
	Healthcheck *healthcheck         `json:"healthcheck"`
	Profiles    []string             `json:"profiles"`
	Restart     string               `json:"restart"`
	StopGrace   string               `json:"stop_grace_period"`
}

type dependsOn struct {
	Condition string `json:"condition"`
}

type healthcheck struct {
	Test     []string `json:"test"`
	Interval string   `json:"interval"`
	Timeout  string   `json:"timeout"`
	Retries  int      `json:"retries"`
}

func loadCompose(t *testing.T) compose {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var c compose
	if err := yaml.UnmarshalStrict(b, &c); err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	return c
}

// publishes returns the container ports a service publishes on 127.0.0.1.
func publishes(t *testing.T, name string, s composeService) map[string]bool {
	out := map[string]bool{}
	for _, p := range s.Ports {
		parts := strings.Split(p, ":")
		if len(parts) != 3 || parts[0] != "127.0.0.1" {
			t.Errorf("%s: port %q: publish on 127.0.0.1 only (127.0.0.1:host:container)", name, p)
			continue
		}
		out[parts[2]] = true
	}
	return out
}

func TestCompose(t *testing.T) {
	c := loadCompose(t)
	var names []string
	for n := range c.Services {
		names = append(names, n)
	}
	sort.Strings(names)
	if got, want := strings.Join(names, " "), "collect gremlin lineageflow localstack redis replay verify"; got != want {
		t.Fatalf("services %q, want %q", got, want)
	}
	ls, gr, app, rp, vf := c.Services["localstack"], c.Services["gremlin"], c.Services["lineageflow"], c.Services["replay"], c.Services["verify"]

	// Redis (the shared dedup tier): 7.x (SET NX GET), 6379, health-checked,
	// and the service uses it.
	rd := c.Services["redis"]
	if !strings.HasPrefix(rd.Image, "redis:7") || !publishes(t, "redis", rd)["6379"] || rd.Healthcheck == nil {
		t.Errorf("redis: image %q (want redis:7.x), port 6379 published and a healthcheck", rd.Image)
	}
	if got := app.Environment["LINEAGEFLOW_DEDUP"]; got != "redis://redis:6379/0" {
		t.Errorf("lineageflow: LINEAGEFLOW_DEDUP=%q, want redis://redis:6379/0", got)
	}

	// LocalStack: Kinesis and DynamoDB on 4566, health-checked.
	if !strings.HasPrefix(ls.Image, "localstack/localstack:") {
		t.Errorf("localstack image %q", ls.Image)
	}
	for _, svc := range []string{"kinesis", "dynamodb"} {
		if !strings.Contains(ls.Environment["SERVICES"], svc) {
			t.Errorf("localstack SERVICES=%q lacks %s", ls.Environment["SERVICES"], svc)
		}
	}
	if !publishes(t, "localstack", ls)["4566"] || ls.Healthcheck == nil {
		t.Error("localstack: want port 4566 published and a healthcheck")
	}

	// Gremlin Server: the stand-in's version and configuration.
	checkGremlin(t, gr)

	// The service runs `lineageflow run` with flags it has.
	if app.Build != "." || len(app.Command) != 1 || app.Command[0] != "run" {
		t.Errorf("lineageflow: build %q command %v, want build . and [run]", app.Build, app.Command)
	}
	checkEnv(t, "compose lineageflow", "run", app.Environment, "LINEAGEFLOW_STREAM", "LINEAGEFLOW_REGION",
		"LINEAGEFLOW_KINESIS_ENDPOINT", "LINEAGEFLOW_DYNAMODB_ENDPOINT", "LINEAGEFLOW_SINK", "LINEAGEFLOW_DATA_DIR",
		"LINEAGEFLOW_HTTP_ADDR", "LINEAGEFLOW_ACCESS_KEY_ID", "LINEAGEFLOW_SECRET_ACCESS_KEY")
	env := app.Environment
	for _, k := range []string{"LINEAGEFLOW_KINESIS_ENDPOINT", "LINEAGEFLOW_DYNAMODB_ENDPOINT"} {
		if env[k] != "http://localstack:4566" {
			t.Errorf("lineageflow %s = %q, want http://localstack:4566", k, env[k])
		}
	}
	if env["LINEAGEFLOW_SINK"] != "gremlin:ws://gremlin:8182/gremlin" {
		t.Errorf("lineageflow LINEAGEFLOW_SINK = %q, want gremlin:ws://gremlin:8182/gremlin", env["LINEAGEFLOW_SINK"])
	}
	httpPort := strings.TrimPrefix(env["LINEAGEFLOW_HTTP_ADDR"], ":")
	if !publishes(t, "lineageflow", app)[httpPort] {
		t.Errorf("lineageflow: the HTTP port %s (metrics, probes) is not published", httpPort)
	}
	dataOnVolume := false
	for _, v := range app.Volumes {
		src, dst, _ := strings.Cut(v, ":")
		if _, named := c.Volumes[src]; named && dst == env["LINEAGEFLOW_DATA_DIR"] {
			dataOnVolume = true
		}
	}
	if !dataOnVolume {
		t.Errorf("lineageflow: LINEAGEFLOW_DATA_DIR %q is not on a named volume", env["LINEAGEFLOW_DATA_DIR"])
	}
	if app.DependsOn["localstack"].Condition != "service_healthy" || app.DependsOn["replay"].Condition != "service_completed_successfully" {
		t.Errorf("lineageflow depends_on %v: want localstack healthy, replay completed (it creates the stream)", app.DependsOn)
	}
	grace := parseDuration(t, "LINEAGEFLOW_SHUTDOWN_GRACE", env["LINEAGEFLOW_SHUTDOWN_GRACE"])
	if sg := parseDuration(t, "stop_grace_period", app.StopGrace); sg < grace+20*time.Second {
		t.Errorf("stop_grace_period %v < shutdown-grace %v + 20s", sg, grace)
	}

	// The one-shot replay: every testdata/*.ndjson, to the stream the service reads.
	if len(rp.Command) == 0 || rp.Command[0] != "replay" || rp.Image != app.Image {
		t.Fatalf("replay: command %v image %q", rp.Command, rp.Image)
	}
	checkEnv(t, "compose replay", "replay", rp.Environment, "LINEAGEFLOW_STREAM", "LINEAGEFLOW_REGION", "LINEAGEFLOW_KINESIS_ENDPOINT")
	for _, k := range []string{"LINEAGEFLOW_STREAM", "LINEAGEFLOW_REGION", "LINEAGEFLOW_KINESIS_ENDPOINT", "LINEAGEFLOW_ACCESS_KEY_ID"} {
		if rp.Environment[k] != env[k] {
			t.Errorf("replay %s = %q, the service has %q", k, rp.Environment[k], env[k])
		}
	}
	checkFixtureArgs(t, "replay", rp)
	if rp.Restart != "no" {
		t.Errorf("replay restart %q, want \"no\" (one-shot)", rp.Restart)
	}

	// verify reads the same graph.
	checkEnv(t, "compose verify", "verify", vf.Environment, "LINEAGEFLOW_GREMLIN_ENDPOINT")
	if got, want := vf.Environment["LINEAGEFLOW_GREMLIN_ENDPOINT"], strings.TrimPrefix(env["LINEAGEFLOW_SINK"], "gremlin:"); got != want {
		t.Errorf("verify reads %q, the service writes %q", got, want)
	}
	checkFixtureArgs(t, "verify", vf)

	// The collector: `lineageflow collect` on the stream the service reads,
	// with a key (it listens beyond loopback in its container), published,
	// after the replay created the stream.
	col := c.Services["collect"]
	if len(col.Command) != 1 || col.Command[0] != "collect" || col.Image != app.Image {
		t.Errorf("collect: command %v image %q", col.Command, col.Image)
	}
	checkEnv(t, "compose collect", "collect", col.Environment, "LINEAGEFLOW_STREAM", "LINEAGEFLOW_REGION",
		"LINEAGEFLOW_KINESIS_ENDPOINT", "LINEAGEFLOW_HTTP_ADDR", "LINEAGEFLOW_API_KEYS")
	for _, k := range []string{"LINEAGEFLOW_STREAM", "LINEAGEFLOW_REGION", "LINEAGEFLOW_KINESIS_ENDPOINT"} {
		if col.Environment[k] != env[k] {
			t.Errorf("collect %s = %q, the service has %q", k, col.Environment[k], env[k])
		}
	}
	if p := strings.TrimPrefix(col.Environment["LINEAGEFLOW_HTTP_ADDR"], ":"); !publishes(t, "collect", col)[p] {
		t.Errorf("collect: port %s not published", p)
	}
	if col.DependsOn["replay"].Condition != "service_completed_successfully" {
		t.Errorf("collect depends_on %v: want replay completed (it creates the stream)", col.DependsOn)
	}
	grace = parseDuration(t, "LINEAGEFLOW_SHUTDOWN_GRACE", col.Environment["LINEAGEFLOW_SHUTDOWN_GRACE"])
	if sg := parseDuration(t, "stop_grace_period", col.StopGrace); sg < grace+5*time.Second {
		t.Errorf("collect stop_grace_period %v < shutdown-grace %v + 5s", sg, grace)
	}
}

// checkFixtureArgs: the command's files are exactly testdata/*.ndjson,
// mounted at /testdata.
func checkFixtureArgs(t *testing.T, name string, s composeService) {
	t.Helper()
	want, _ := filepath.Glob(filepath.Join(root, "testdata", "*.ndjson"))
	var wantArgs []string
	for _, f := range want {
		wantArgs = append(wantArgs, "/testdata/"+filepath.Base(f))
	}
	if got := strings.Join(s.Command[1:], " "); got != strings.Join(wantArgs, " ") || len(wantArgs) == 0 {
		t.Errorf("%s files %q, want every testdata/*.ndjson: %q", name, got, strings.Join(wantArgs, " "))
	}
	mounted := false
	for _, v := range s.Volumes {
		if v == "./testdata:/testdata:ro" {
			mounted = true
		}
	}
	if !mounted {
		t.Errorf("%s: ./testdata is not mounted at /testdata", name)
	}
}

// checkGremlin: the image is the stand-in's Gremlin Server version, and it
// runs with the very configuration files scripts/standins-start.sh uses.
func checkGremlin(t *testing.T, gr composeService) {
	t.Helper()
	pom, err := os.ReadFile(filepath.Join(root, "standins/gremlin/pom.xml"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`<tinkerpop.version>([^<$]+)</tinkerpop.version>`).FindSubmatch(pom)
	if m == nil {
		m = regexp.MustCompile(`<artifactId>gremlin-server</artifactId>\s*<version>([^<$]+)</version>`).FindSubmatch(pom)
	}
	if m == nil {
		t.Fatal("no Gremlin Server version in standins/gremlin/pom.xml")
	}
	if want := "tinkerpop/gremlin-server:" + string(m[1]); gr.Image != want {
		t.Errorf("gremlin image %q, the stand-in runs %s", gr.Image, want)
	}
	if !publishes(t, "gremlin", gr)["8182"] {
		t.Error("gremlin: port 8182 not published")
	}
	// Which conf files does the stand-in script use?
	script, err := os.ReadFile(filepath.Join(root, "scripts/standins-start.sh"))
	if err != nil {
		t.Fatal(err)
	}
	common, _ := os.ReadFile(filepath.Join(root, "scripts/lib/standins-common.sh"))
	if !strings.Contains(string(common), "GREMLIN_DIR=$REPO_ROOT/standins/gremlin") {
		t.Fatal("scripts/lib/standins-common.sh no longer sets GREMLIN_DIR=$REPO_ROOT/standins/gremlin: update this check")
	}
	scriptConf := map[string]bool{}
	for _, m := range regexp.MustCompile(`\$GREMLIN_DIR/conf/([A-Za-z0-9._-]+)`).FindAllStringSubmatch(string(script), -1) {
		scriptConf[m[1]] = true
	}
	if !scriptConf["gremlin-server.yaml"] {
		t.Fatalf("scripts/standins-start.sh does not start Gremlin Server with $GREMLIN_DIR/conf/gremlin-server.yaml (found %v)", scriptConf)
	}
	// Files the server yaml refers to ("conf/x") are read relative to the
	// working directory: all must be mounted there, from standins/gremlin/conf.
	serverYAML, err := os.ReadFile(filepath.Join(root, "standins/gremlin/conf/gremlin-server.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	mounts := map[string]string{} // container path -> host file (clean, relative to root)
	for _, v := range gr.Volumes {
		parts := strings.Split(v, ":")
		if len(parts) < 2 {
			t.Errorf("gremlin volume %q", v)
			continue
		}
		host := path.Clean(parts[0])
		if !strings.HasPrefix(host, "standins/gremlin/conf/") {
			t.Errorf("gremlin mounts %s: every configuration file must come from standins/gremlin/conf", parts[0])
		}
		if _, err := os.Stat(filepath.Join(root, host)); err != nil {
			t.Errorf("gremlin mounts %s: %v", parts[0], err)
		}
		if len(parts) < 3 || parts[2] != "ro" {
			t.Errorf("gremlin volume %q: mount the configuration read-only", v)
		}
		mounts[parts[1]] = host
	}
	for _, m := range regexp.MustCompile(`conf/([A-Za-z0-9._-]+)`).FindAllStringSubmatch(string(serverYAML), -1) {
		dst := path.Join(gr.WorkingDir, "conf", m[1])
		if _, err := os.Stat(filepath.Join(root, "standins/gremlin/conf", m[1])); err != nil {
			continue // a file of the image itself (none today)
		}
		if mounts[dst] != "standins/gremlin/conf/"+m[1] {
			t.Errorf("gremlin-server.yaml reads conf/%s: compose must mount standins/gremlin/conf/%s at %s (got %q)", m[1], m[1], dst, mounts[dst])
		}
	}
	// The server starts with the mounted copy of the stand-in's gremlin-server.yaml.
	var yamlDst string
	for dst, host := range mounts {
		if host == "standins/gremlin/conf/gremlin-server.yaml" {
			yamlDst = dst
		}
	}
	ep := strings.Join(gr.Entrypoint, " ")
	rel := strings.TrimPrefix(yamlDst, gr.WorkingDir+"/")
	if yamlDst == "" || !strings.Contains(ep, rel) || !strings.Contains(ep, "gremlin-server.sh") {
		t.Errorf("gremlin entrypoint %q does not start the server with the mounted gremlin-server.yaml (%s)", ep, yamlDst)
	}
	for f := range scriptConf {
		found := false
		for _, host := range mounts {
			if host == "standins/gremlin/conf/"+f {
				found = true
			}
		}
		if !found {
			t.Errorf("the stand-in script uses conf/%s; compose does not mount it", f)
		}
	}
}
