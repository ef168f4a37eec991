package check

import (
	"net"
	"slices"
	"strconv"
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
)

// explorerObjs is one rendering of deploy/explorer (the base or an overlay).
type explorerObjs struct {
	dep *appsv1.Deployment
	svc *corev1.Service
	sa  *corev1.ServiceAccount
	pdb *policyv1.PodDisruptionBudget
	hpa *autoscalingv2.HorizontalPodAutoscaler
	ing *networkingv1.Ingress
	cms map[string]*corev1.ConfigMap
}

func renderExplorer(t *testing.T, dir string) explorerObjs {
	t.Helper()
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	rm, err := k.Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	r := explorerObjs{cms: map[string]*corev1.ConfigMap{}}
	for _, res := range rm.Resources() {
		doc, err := res.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		obj, err := decodeStrict(doc)
		if err != nil {
			t.Errorf("%s: schema: %v\n%s", dir, err, doc)
			continue
		}
		for _, e := range validation.IsDNS1123Subdomain(res.GetName()) {
			t.Errorf("%s: %s %s: name: %s", dir, res.GetKind(), res.GetName(), e)
		}
		switch o := obj.(type) {
		case *appsv1.Deployment:
			r.dep = o
		case *corev1.Service:
			r.svc = o
		case *corev1.ServiceAccount:
			r.sa = o
		case *policyv1.PodDisruptionBudget:
			r.pdb = o
		case *autoscalingv2.HorizontalPodAutoscaler:
			r.hpa = o
		case *networkingv1.Ingress:
			r.ing = o
		case *corev1.ConfigMap:
			r.cms[o.Name] = o
		default:
			t.Errorf("%s: unexpected %T", dir, obj)
		}
	}
	if r.dep == nil || r.svc == nil || r.sa == nil || r.pdb == nil || r.hpa == nil || len(r.cms) != 1 {
		t.Fatalf("%s: want a Deployment, Service, ServiceAccount, PodDisruptionBudget, HorizontalPodAutoscaler and one ConfigMap", dir)
	}
	return r
}

// TestKustomizeExplorer: deploy/explorer's base and overlays render, decode
// strictly, and hang together: selectors, IRSA, a Neptune reader endpoint,
// serve's flags only, authentication always on (never -insecure-no-auth),
// probes on the open health route, shutdown that fits the grace period, an
// Ingress whose backend exists; the ALB overlay verifies the ALB's signed
// header against its per-kid keys, the oauth2-proxy overlay sends traffic
// through the proxy, which passes the ID token as a Bearer token.
func TestKustomizeExplorer(t *testing.T) {
	for _, dir := range []string{"../explorer/base", "../explorer/overlays/alb-oidc", "../explorer/overlays/oauth2-proxy"} {
		t.Run(strings.TrimPrefix(dir, "../explorer/"), func(t *testing.T) {
			r := renderExplorer(t, dir)
			spec := r.dep.Spec.Template.Spec
			podLabels := labels.Set(r.dep.Spec.Template.Labels)
			for what, m := range map[string]map[string]string{
				"Deployment selector": r.dep.Spec.Selector.MatchLabels, "Service selector": r.svc.Spec.Selector,
				"PodDisruptionBudget selector": r.pdb.Spec.Selector.MatchLabels,
			} {
				if len(m) == 0 || !labels.SelectorFromSet(m).Matches(podLabels) {
					t.Errorf("%s %v does not select the pod labels %v", what, m, podLabels)
				}
			}
			if podLabels["app.kubernetes.io/component"] != "explorer" {
				t.Errorf("pod labels %v: the explorer's pods must not match the workers' selector", podLabels)
			}
			if ref := r.hpa.Spec.ScaleTargetRef; ref.Kind != "Deployment" || ref.Name != r.dep.Name {
				t.Errorf("HPA targets %s %s, not the Deployment %s", ref.Kind, ref.Name, r.dep.Name)
			}
			if mn := r.hpa.Spec.MinReplicas; mn == nil || *mn < 2 || *mn > r.hpa.Spec.MaxReplicas {
				t.Errorf("HPA min %v max %d: want 2 <= min <= max (the PDB keeps one)", mn, r.hpa.Spec.MaxReplicas)
			}
			if spec.ServiceAccountName != r.sa.Name || !strings.HasPrefix(r.sa.Annotations["eks.amazonaws.com/role-arn"], "arn:aws:iam::") {
				t.Errorf("pods run as %q; ServiceAccount %q role %q: want IRSA", spec.ServiceAccountName, r.sa.Name, r.sa.Annotations["eks.amazonaws.com/role-arn"])
			}
			var c *corev1.Container
			ports := map[string]int32{}
			for i := range spec.Containers {
				cc := &spec.Containers[i]
				if len(cc.Args) > 0 && cc.Args[0] == "serve" {
					c = cc
				}
				for _, p := range cc.Ports {
					ports[p.Name] = p.ContainerPort
				}
				if sc := cc.SecurityContext; sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
					t.Errorf("container %s may escalate privileges", cc.Name)
				}
			}
			if c == nil {
				t.Fatal("no container runs `lineageflow serve`")
			}
			env := map[string]string{}
			for _, ef := range c.EnvFrom {
				cm := r.cms[ef.ConfigMapRef.Name]
				if cm == nil {
					t.Fatalf("envFrom ConfigMap %q is not rendered", ef.ConfigMapRef.Name)
				}
				for k, v := range cm.Data {
					env[k] = v
				}
			}
			for _, e := range c.Env {
				env[e.Name] = e.Value
			}
			checkEnv(t, dir, "serve", env, "LINEAGEFLOW_GREMLIN_ENDPOINT", "LINEAGEFLOW_HTTP_ADDR", "LINEAGEFLOW_AUTH_JWKS_URL",
				"LINEAGEFLOW_AUTH_ISSUER", "LINEAGEFLOW_SHUTDOWN_GRACE")
			if ep := env["LINEAGEFLOW_GREMLIN_ENDPOINT"]; !strings.HasPrefix(ep, "wss://") || !strings.Contains(ep, ".cluster-ro-") {
				t.Errorf("LINEAGEFLOW_GREMLIN_ENDPOINT %q: want the cluster's reader endpoint over wss:// (.cluster-ro-)", ep)
			}
			if env["LINEAGEFLOW_NEPTUNE_IAM"] == "true" && env["LINEAGEFLOW_REGION"] == "" {
				t.Error("LINEAGEFLOW_NEPTUNE_IAM=true needs LINEAGEFLOW_REGION")
			}
			if _, ok := env["LINEAGEFLOW_INSECURE_NO_AUTH"]; ok {
				t.Error("LINEAGEFLOW_INSECURE_NO_AUTH is set: the explorer must verify identities")
			}
			if u := env["LINEAGEFLOW_AUTH_JWKS_URL"]; !strings.HasPrefix(u, "https://") {
				t.Errorf("LINEAGEFLOW_AUTH_JWKS_URL %q: want https://", u)
			}
			_, port, err := net.SplitHostPort(env["LINEAGEFLOW_HTTP_ADDR"])
			if err != nil || ports["http"] == 0 || port != itoa(ports["http"]) {
				t.Errorf("LINEAGEFLOW_HTTP_ADDR %q vs containerPort http %d", env["LINEAGEFLOW_HTTP_ADDR"], ports["http"])
			}
			if p := c.ReadinessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/api/lf/v1/health" {
				t.Error("readiness probe: want GET /api/lf/v1/health (the route open without a token)")
			}
			grace := parseDuration(t, "LINEAGEFLOW_SHUTDOWN_GRACE", env["LINEAGEFLOW_SHUTDOWN_GRACE"])
			if tgp := spec.TerminationGracePeriodSeconds; tgp == nil || time.Duration(*tgp)*time.Second < grace+5*time.Second {
				t.Errorf("terminationGracePeriodSeconds %v < -shutdown-grace %v + 5s", tgp, grace)
			}
			for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
				if _, ok := c.Resources.Limits[res]; !ok {
					t.Errorf("explorer: no %s limit", res)
				}
			}
			if psc := spec.SecurityContext; psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot {
				t.Error("pod securityContext: want runAsNonRoot")
			}
			if len(r.svc.Spec.Ports) != 1 || ports[r.svc.Spec.Ports[0].TargetPort.String()] == 0 {
				t.Errorf("Service ports %v: want one, targeting a named container port (%v)", r.svc.Spec.Ports, ports)
			}
			if r.ing != nil {
				for _, rule := range r.ing.Spec.Rules {
					for _, p := range rule.HTTP.Paths {
						if b := p.Backend.Service; b == nil || b.Name != r.svc.Name || b.Port.Name != r.svc.Spec.Ports[0].Name {
							t.Errorf("Ingress backend %v is not the Service %s port %s", p.Backend.Service, r.svc.Name, r.svc.Spec.Ports[0].Name)
						}
					}
				}
			}
			switch {
			case strings.HasSuffix(dir, "alb-oidc"):
				a := r.ing.Annotations
				if a["alb.ingress.kubernetes.io/auth-type"] != "oidc" || a["alb.ingress.kubernetes.io/healthcheck-path"] != "/api/lf/v1/health" {
					t.Errorf("ALB Ingress annotations %v: want auth-type oidc and the health route as health check", a)
				}
				if env["LINEAGEFLOW_AUTH_HEADER"] != "x-amzn-oidc-data" || !strings.Contains(env["LINEAGEFLOW_AUTH_JWKS_URL"], "public-keys.auth.elb.") ||
					!strings.HasSuffix(env["LINEAGEFLOW_AUTH_JWKS_URL"], "/{kid}") {
					t.Errorf("ALB overlay: header %q keys %q: want x-amzn-oidc-data verified against the ALB's per-kid keys", env["LINEAGEFLOW_AUTH_HEADER"], env["LINEAGEFLOW_AUTH_JWKS_URL"])
				}
			case strings.HasSuffix(dir, "oauth2-proxy"):
				if r.svc.Spec.Ports[0].TargetPort.String() != "proxy" {
					t.Errorf("Service targets %s: want the proxy", r.svc.Spec.Ports[0].TargetPort.String())
				}
				var proxy *corev1.Container
				for i := range spec.Containers {
					if spec.Containers[i].Name == "oauth2-proxy" {
						proxy = &spec.Containers[i]
					}
				}
				if proxy == nil || !slices.Contains(proxy.Args, "--pass-authorization-header=true") ||
					!slices.Contains(proxy.Args, "--upstream=http://127.0.0.1:"+itoa(ports["http"])+"/") {
					t.Errorf("oauth2-proxy sidecar %v: want it to pass the ID token (Bearer) to the explorer's port", proxy)
				}
				if env["LINEAGEFLOW_AUTH_HEADER"] != "" {
					t.Error("oauth2-proxy overlay: the token comes as Authorization: Bearer; no trusted header")
				}
			}
		})
	}
}

func itoa(n int32) string { return strconv.Itoa(int(n)) }
