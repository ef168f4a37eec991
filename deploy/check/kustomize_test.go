package check

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// rendered is the kustomize output, each object decoded strictly.
type rendered struct {
	sts  *appsv1.StatefulSet
	svc  *corev1.Service
	sa   *corev1.ServiceAccount
	pdb  *policyv1.PodDisruptionBudget
	cms  map[string]*corev1.ConfigMap
	docs map[string][]byte // kind/name -> YAML
}

// decodeStrict decodes one manifest into the typed object of its kind,
// refusing unknown fields and wrong types: the Kubernetes API schema check,
// offline. It returns the object.
func decodeStrict(doc []byte) (any, error) {
	var meta struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := yaml.Unmarshal(doc, &meta); err != nil {
		return nil, err
	}
	var obj any
	switch meta.APIVersion + "/" + meta.Kind {
	case "apps/v1/StatefulSet":
		obj = &appsv1.StatefulSet{}
	case "apps/v1/Deployment":
		obj = &appsv1.Deployment{}
	case "autoscaling/v2/HorizontalPodAutoscaler":
		obj = &autoscalingv2.HorizontalPodAutoscaler{}
	case "v1/Service":
		obj = &corev1.Service{}
	case "v1/ServiceAccount":
		obj = &corev1.ServiceAccount{}
	case "v1/ConfigMap":
		obj = &corev1.ConfigMap{}
	case "policy/v1/PodDisruptionBudget":
		obj = &policyv1.PodDisruptionBudget{}
	case "networking.k8s.io/v1/Ingress":
		obj = &networkingv1.Ingress{}
	default:
		return nil, fmt.Errorf("unexpected %s %s (add it to the check)", meta.APIVersion, meta.Kind)
	}
	if err := yaml.UnmarshalStrict(doc, obj); err != nil {
		return nil, fmt.Errorf("%s %s: %w", meta.APIVersion, meta.Kind, err)
	}
	return obj, nil
}

func render(t *testing.T) rendered {
	t.Helper()
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	rm, err := k.Run(filesys.MakeFsOnDisk(), "../base")
	if err != nil {
		t.Fatalf("kustomize build deploy/base: %v", err)
	}
	r := rendered{cms: map[string]*corev1.ConfigMap{}, docs: map[string][]byte{}}
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
		r.docs[res.GetKind()+"/"+res.GetName()] = doc
		for _, e := range validation.IsDNS1123Subdomain(res.GetName()) {
			t.Errorf("%s %s: name: %s", res.GetKind(), res.GetName(), e)
		}
		for k, v := range res.GetLabels() {
			for _, e := range append(validation.IsQualifiedName(k), validation.IsValidLabelValue(v)...) {
				t.Errorf("%s %s: label %s=%s: %s", res.GetKind(), res.GetName(), k, v, e)
			}
		}
		switch o := obj.(type) {
		case *appsv1.StatefulSet:
			r.sts = o
		case *corev1.Service:
			r.svc = o
		case *corev1.ServiceAccount:
			r.sa = o
		case *policyv1.PodDisruptionBudget:
			r.pdb = o
		case *corev1.ConfigMap:
			r.cms[o.Name] = o
		}
	}
	if r.sts == nil || r.svc == nil || r.sa == nil || r.pdb == nil || len(r.cms) != 1 {
		t.Fatalf("want a StatefulSet, Service, ServiceAccount, PodDisruptionBudget and one ConfigMap; got %v", keys(r.docs))
	}
	return r
}

func keys[V any](m map[string]V) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

// The strict decoder is what makes this a schema check: prove it refuses a
// misspelt field, a wrong type and a bad quantity.
func TestStrictDecodingCatchesMistakes(t *testing.T) {
	for name, doc := range map[string]string{
		"unknown field":  "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: x}\nspec: {replica: 2}\n",
		"wrong type":     "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: x}\nspec: {replicas: two}\n",
		"bad quantity":   "apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec: {ports: [{port: 9090, targetPort: {a: 1}}]}\n",
		"nested unknown": "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: x}\nspec: {maxUnavailable: 1, selector: {matchLabel: {a: b}}}\n",
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := decodeStrict([]byte(doc)); err == nil {
				t.Errorf("accepted:\n%s", doc)
			}
		})
	}
	if _, err := decodeStrict([]byte("apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: x}\nspec: {replicas: 2}\n")); err != nil {
		t.Errorf("refused a valid StatefulSet: %v", err)
	}
}

func TestKustomizeBase(t *testing.T) {
	r := render(t)
	sts, svc, pdb := r.sts, r.svc, r.pdb
	spec := sts.Spec.Template.Spec
	podLabels := labels.Set(sts.Spec.Template.Labels)

	// Selectors: non-empty, and they select the pods.
	sel := sts.Spec.Selector
	if sel == nil || len(sel.MatchLabels) == 0 {
		t.Fatal("StatefulSet selector is empty")
	}
	for what, m := range map[string]map[string]string{
		"StatefulSet selector": sel.MatchLabels, "Service selector": svc.Spec.Selector,
		"PodDisruptionBudget selector": pdb.Spec.Selector.MatchLabels,
	} {
		if len(m) == 0 || !labels.SelectorFromSet(m).Matches(podLabels) {
			t.Errorf("%s %v does not select the pod labels %v", what, m, podLabels)
		}
	}

	// Headless governing Service exposing the metrics port.
	if sts.Spec.ServiceName != svc.Name || svc.Spec.ClusterIP != corev1.ClusterIPNone {
		t.Errorf("serviceName %q, Service %q clusterIP %q: want the headless Service", sts.Spec.ServiceName, svc.Name, svc.Spec.ClusterIP)
	}

	// IRSA.
	if spec.ServiceAccountName != r.sa.Name {
		t.Errorf("pods run as ServiceAccount %q, not %q", spec.ServiceAccountName, r.sa.Name)
	}
	if arn := r.sa.Annotations["eks.amazonaws.com/role-arn"]; !strings.HasPrefix(arn, "arn:aws:iam::") {
		t.Errorf("ServiceAccount eks.amazonaws.com/role-arn = %q", arn)
	}

	// PDB: at most one worker down; sink-down pods stay evictable.
	if pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.IntValue() != 1 {
		t.Errorf("PDB maxUnavailable = %v, want 1", pdb.Spec.MaxUnavailable)
	}
	if p := pdb.Spec.UnhealthyPodEvictionPolicy; p == nil || *p != policyv1.AlwaysAllow {
		t.Errorf("PDB unhealthyPodEvictionPolicy = %v, want AlwaysAllow", p)
	}

	if len(spec.Containers) != 1 {
		t.Fatalf("%d containers, want 1 worker per pod", len(spec.Containers))
	}
	c := spec.Containers[0]
	if len(c.Args) == 0 || c.Args[0] != "run" {
		t.Errorf("container args %v, want [run]", c.Args)
	}

	// Environment: every LINEAGEFLOW_* is a flag of run; the required ones are set.
	env := map[string]string{}
	for _, ef := range c.EnvFrom {
		if ef.ConfigMapRef == nil {
			t.Fatalf("envFrom %v: only ConfigMaps are expected", ef)
		}
		cm := r.cms[ef.ConfigMapRef.Name]
		if cm == nil {
			t.Fatalf("envFrom ConfigMap %q is not in the base (kustomize renames generated ones)", ef.ConfigMapRef.Name)
		}
		for k, v := range cm.Data {
			env[k] = v
		}
	}
	var workerIDRef string
	for _, e := range c.Env {
		env[e.Name] = e.Value
		if e.ValueFrom != nil {
			env[e.Name] = "(from)"
			if e.ValueFrom.FieldRef != nil && e.Name == "LINEAGEFLOW_WORKER_ID" {
				workerIDRef = e.ValueFrom.FieldRef.FieldPath
			}
		}
	}
	checkEnv(t, "StatefulSet", "run", env, "LINEAGEFLOW_STREAM", "LINEAGEFLOW_REGION", "LINEAGEFLOW_DATA_DIR",
		"LINEAGEFLOW_SINK", "LINEAGEFLOW_WORKER_ID", "LINEAGEFLOW_HTTP_ADDR", "LINEAGEFLOW_SHUTDOWN_GRACE")
	if workerIDRef != "metadata.name" {
		t.Errorf("LINEAGEFLOW_WORKER_ID from %q, want the pod name (fieldRef metadata.name)", workerIDRef)
	}
	if !strings.HasPrefix(env["LINEAGEFLOW_SINK"], "gremlin:wss://") {
		t.Errorf("LINEAGEFLOW_SINK = %q, want gremlin:wss://<neptune>:8182/gremlin", env["LINEAGEFLOW_SINK"])
	}
	for _, k := range []string{"LINEAGEFLOW_KINESIS_ENDPOINT", "LINEAGEFLOW_DYNAMODB_ENDPOINT", "LINEAGEFLOW_ACCESS_KEY_ID", "LINEAGEFLOW_SECRET_ACCESS_KEY"} {
		if _, ok := env[k]; ok {
			t.Errorf("%s is set: on EKS the SDK's endpoints and IRSA credentials are used", k)
		}
	}

	// Pebble directory on the claim.
	dataDir := env["LINEAGEFLOW_DATA_DIR"]
	if len(sts.Spec.VolumeClaimTemplates) != 1 {
		t.Fatalf("%d volumeClaimTemplates, want 1 (Pebble)", len(sts.Spec.VolumeClaimTemplates))
	}
	claim := sts.Spec.VolumeClaimTemplates[0]
	mounted := false
	for _, m := range c.VolumeMounts {
		if m.Name == claim.Name && m.MountPath == dataDir && !m.ReadOnly {
			mounted = true
		}
	}
	if !mounted {
		t.Errorf("claim %q is not mounted read-write at LINEAGEFLOW_DATA_DIR %q", claim.Name, dataDir)
	}
	if st, ok := claim.Spec.Resources.Requests[corev1.ResourceStorage]; !ok || st.IsZero() {
		t.Error("the Pebble claim requests no storage")
	}

	// Probes on the HTTP server's port.
	_, port, err := net.SplitHostPort(env["LINEAGEFLOW_HTTP_ADDR"])
	if err != nil {
		t.Fatalf("LINEAGEFLOW_HTTP_ADDR %q: %v", env["LINEAGEFLOW_HTTP_ADDR"], err)
	}
	var httpPort int32
	for _, p := range c.Ports {
		if p.Name == "http" {
			httpPort = p.ContainerPort
		}
	}
	if fmt.Sprint(httpPort) != port {
		t.Errorf("containerPort http = %d, the server listens on %s", httpPort, port)
	}
	probe := func(what string, p *corev1.Probe, path string) {
		if p == nil || p.HTTPGet == nil {
			t.Errorf("%s probe missing", what)
			return
		}
		if p.HTTPGet.Path != path || (p.HTTPGet.Port.String() != "http" && p.HTTPGet.Port.String() != port) {
			t.Errorf("%s probe GET %s on %s, want %s on http", what, p.HTTPGet.Path, p.HTTPGet.Port.String(), path)
		}
	}
	probe("liveness", c.LivenessProbe, "/healthz")
	probe("readiness", c.ReadinessProbe, "/readyz")
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].TargetPort.String() != "http" {
		t.Errorf("Service ports %v: want one, targeting the http port", svc.Spec.Ports)
	}

	// Resources.
	for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		req, okR := c.Resources.Requests[res]
		lim, okL := c.Resources.Limits[res]
		if !okR || !okL || req.Cmp(lim) > 0 {
			t.Errorf("%s: request %v, limit %v: want both, request <= limit", res, req.String(), lim.String())
		}
	}

	// Shutdown fits: -shutdown-grace for the shards, +5s the worker waits
	// for the KCL beyond it, +10s sink close, +5s HTTP server.
	grace := parseDuration(t, "LINEAGEFLOW_SHUTDOWN_GRACE", env["LINEAGEFLOW_SHUTDOWN_GRACE"])
	if def := flagsOf(t, "run")["LINEAGEFLOW_SHUTDOWN_GRACE"].Default; def == "" {
		t.Error("run has no -shutdown-grace default")
	}
	need := grace + 20*time.Second
	tgp := spec.TerminationGracePeriodSeconds
	if tgp == nil || time.Duration(*tgp)*time.Second < need {
		t.Errorf("terminationGracePeriodSeconds = %v, want >= %v (shutdown-grace %v + 20s)", tgp, need, grace)
	}

	// Non-root, as the image.
	psc := spec.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.FSGroup == nil {
		t.Error("pod securityContext: want runAsNonRoot and fsGroup (the Pebble volume must be writable)")
	}
	if sc := c.SecurityContext; sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Error("container may escalate privileges")
	}
	if c.Image != "lineageflow:dev" {
		t.Errorf("image %q: the base uses lineageflow:dev, overlays set theirs", c.Image)
	}
}
