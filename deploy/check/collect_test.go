package check

import (
	"encoding/json"
	"net"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// TestKustomizeCollect renders deploy/collect (the `lineageflow collect`
// Deployment) and checks it like the worker's base: every object decoded
// strictly; selectors select the pods; the HPA scales the Deployment; IRSA;
// every LINEAGEFLOW_* is a flag of collect and the required ones are set;
// API keys from a mounted Secret (collect refuses an open address without
// them); probes on the server's port; resources; the grace period covers
// -shutdown-grace; and the IAM policy allows exactly what collect calls,
// on one stream.
func TestKustomizeCollect(t *testing.T) {
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	rm, err := k.Run(filesys.MakeFsOnDisk(), "../collect")
	if err != nil {
		t.Fatalf("kustomize build deploy/collect: %v", err)
	}
	var (
		dep *appsv1.Deployment
		svc *corev1.Service
		sa  *corev1.ServiceAccount
		pdb *policyv1.PodDisruptionBudget
		hpa *autoscalingv2.HorizontalPodAutoscaler
		cms = map[string]*corev1.ConfigMap{}
	)
	for _, res := range rm.Resources() {
		doc, err := res.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		obj, err := decodeStrict(doc)
		if err != nil {
			t.Errorf("schema: %v\n%s", err, doc)
			continue
		}
		switch o := obj.(type) {
		case *appsv1.Deployment:
			dep = o
		case *corev1.Service:
			svc = o
		case *corev1.ServiceAccount:
			sa = o
		case *policyv1.PodDisruptionBudget:
			pdb = o
		case *autoscalingv2.HorizontalPodAutoscaler:
			hpa = o
		case *corev1.ConfigMap:
			cms[o.Name] = o
		default:
			t.Errorf("unexpected %T", o)
		}
	}
	if dep == nil || svc == nil || sa == nil || pdb == nil || hpa == nil || len(cms) != 1 {
		t.Fatal("want a Deployment, Service, ServiceAccount, PodDisruptionBudget, HorizontalPodAutoscaler and one ConfigMap")
	}
	podLabels := labels.Set(dep.Spec.Template.Labels)
	for what, m := range map[string]map[string]string{
		"Deployment selector": dep.Spec.Selector.MatchLabels, "Service selector": svc.Spec.Selector,
		"PodDisruptionBudget selector": pdb.Spec.Selector.MatchLabels,
	} {
		if len(m) == 0 || !labels.SelectorFromSet(m).Matches(podLabels) {
			t.Errorf("%s %v does not select the pod labels %v", what, m, podLabels)
		}
	}
	if podLabels["app.kubernetes.io/component"] != "collect" {
		t.Errorf("pod labels %v: the worker's selectors must not match collectors", podLabels)
	}
	if ref := hpa.Spec.ScaleTargetRef; ref.Kind != "Deployment" || ref.Name != dep.Name {
		t.Errorf("HPA scales %s %s, not the Deployment %s", ref.Kind, ref.Name, dep.Name)
	}
	if hpa.Spec.MinReplicas == nil || *hpa.Spec.MinReplicas < 2 || hpa.Spec.MaxReplicas < *hpa.Spec.MinReplicas {
		t.Errorf("HPA replicas %v..%d: want at least 2 (one may be drained)", hpa.Spec.MinReplicas, hpa.Spec.MaxReplicas)
	}
	if pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.IntValue() != 1 {
		t.Errorf("PDB maxUnavailable = %v, want 1", pdb.Spec.MaxUnavailable)
	}
	spec := dep.Spec.Template.Spec
	if spec.ServiceAccountName != sa.Name {
		t.Errorf("pods run as ServiceAccount %q, not %q", spec.ServiceAccountName, sa.Name)
	}
	if arn := sa.Annotations["eks.amazonaws.com/role-arn"]; !strings.HasPrefix(arn, "arn:aws:iam::") {
		t.Errorf("ServiceAccount eks.amazonaws.com/role-arn = %q", arn)
	}
	if len(spec.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(spec.Containers))
	}
	c := spec.Containers[0]
	if len(c.Args) != 1 || c.Args[0] != "collect" {
		t.Errorf("container args %v, want [collect]", c.Args)
	}
	env := map[string]string{}
	for _, ef := range c.EnvFrom {
		cm := cms[ef.ConfigMapRef.Name]
		if cm == nil {
			t.Fatalf("envFrom ConfigMap %q is not in deploy/collect", ef.ConfigMapRef.Name)
		}
		for k, v := range cm.Data {
			env[k] = v
		}
	}
	for _, e := range c.Env {
		env[e.Name] = e.Value
		if e.ValueFrom != nil {
			env[e.Name] = "(from)"
		}
	}
	checkEnv(t, "Deployment", "collect", env, "LINEAGEFLOW_STREAM", "LINEAGEFLOW_REGION", "LINEAGEFLOW_HTTP_ADDR",
		"LINEAGEFLOW_API_KEYS_FILE", "LINEAGEFLOW_SHUTDOWN_GRACE")
	for _, k := range []string{"LINEAGEFLOW_KINESIS_ENDPOINT", "LINEAGEFLOW_ACCESS_KEY_ID", "LINEAGEFLOW_SECRET_ACCESS_KEY", "LINEAGEFLOW_INSECURE_NO_AUTH", "LINEAGEFLOW_API_KEYS"} {
		if _, ok := env[k]; ok {
			t.Errorf("%s is set: on EKS the SDK's endpoint, IRSA credentials and the keys Secret are used", k)
		}
	}
	// The key file is on a mounted Secret.
	keyDir := env["LINEAGEFLOW_API_KEYS_FILE"][:strings.LastIndex(env["LINEAGEFLOW_API_KEYS_FILE"], "/")]
	secretVol := map[string]bool{}
	for _, v := range spec.Volumes {
		if v.Secret != nil {
			secretVol[v.Name] = true
		}
	}
	mounted := false
	for _, m := range c.VolumeMounts {
		if secretVol[m.Name] && m.MountPath == keyDir && m.ReadOnly {
			mounted = true
		}
	}
	if !mounted {
		t.Errorf("LINEAGEFLOW_API_KEYS_FILE %q is not on a read-only mounted Secret", env["LINEAGEFLOW_API_KEYS_FILE"])
	}
	_, port, err := net.SplitHostPort(env["LINEAGEFLOW_HTTP_ADDR"])
	if err != nil {
		t.Fatalf("LINEAGEFLOW_HTTP_ADDR: %v", err)
	}
	httpPort := ""
	for _, p := range c.Ports {
		if p.Name == "http" {
			httpPort = jsonString(p.ContainerPort)
		}
	}
	if httpPort != port {
		t.Errorf("containerPort http = %s, collect listens on %s", httpPort, port)
	}
	for what, p := range map[string]*corev1.Probe{"liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
		want := map[string]string{"liveness": "/healthz", "readiness": "/readyz"}[what]
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != want || p.HTTPGet.Port.String() != "http" {
			t.Errorf("%s probe: want GET %s on http", what, want)
		}
	}
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].TargetPort.String() != "http" {
		t.Errorf("Service ports %v: want one, targeting the http port", svc.Spec.Ports)
	}
	for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		req, okR := c.Resources.Requests[res]
		lim, okL := c.Resources.Limits[res]
		if !okR || !okL || req.Cmp(lim) > 0 {
			t.Errorf("%s: request %v, limit %v: want both, request <= limit", res, req.String(), lim.String())
		}
	}
	if _, ok := c.Resources.Requests[corev1.ResourceCPU]; !ok {
		t.Error("no CPU request: the HPA's utilization target needs one")
	}
	grace := parseDuration(t, "LINEAGEFLOW_SHUTDOWN_GRACE", env["LINEAGEFLOW_SHUTDOWN_GRACE"])
	if tgp := spec.TerminationGracePeriodSeconds; tgp == nil || time.Duration(*tgp)*time.Second < grace+5*time.Second {
		t.Errorf("terminationGracePeriodSeconds = %v, want >= shutdown-grace %v + 5s", tgp, grace)
	}

	// The IAM policy: exactly what collect calls, on one stream.
	b, err := os.ReadFile("../collect/iam-policy.json")
	if err != nil {
		t.Fatal(err)
	}
	var pol struct {
		Version   string
		Statement []struct {
			Effect   string
			Action   []string
			Resource string
		}
	}
	if err := json.Unmarshal(b, &pol); err != nil {
		t.Fatalf("iam-policy.json: %v", err)
	}
	var actions []string
	for _, st := range pol.Statement {
		if st.Effect != "Allow" || !strings.HasPrefix(st.Resource, "arn:aws:kinesis:") || !strings.Contains(st.Resource, ":stream/") || strings.Contains(st.Resource, "*") {
			t.Errorf("statement %+v: want Allow on one stream ARN", st)
		}
		actions = append(actions, st.Action...)
	}
	sort.Strings(actions)
	if got := strings.Join(actions, ","); got != "kinesis:DescribeStreamSummary,kinesis:ListShards,kinesis:PutRecords" || pol.Version != "2012-10-17" {
		t.Errorf("IAM actions %s (version %s): want PutRecords, DescribeStreamSummary, ListShards", got, pol.Version)
	}
}

func jsonString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
