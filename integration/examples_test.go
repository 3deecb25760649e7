package integration_test

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	ptypes "github.com/traefik/paerser/types"
	"github.com/traefik/traefik/v3/pkg/config/dynamic"
	"github.com/traefik/traefik/v3/pkg/plugins"
	traefikv1alpha1 "github.com/traefik/traefik/v3/pkg/provider/kubernetes/crd/traefikio/v1alpha1"
	corev1 "k8s.io/api/core/v1"

	"github.com/llmgateway/llmgateway/gateway"
	"github.com/llmgateway/llmgateway/integration/examplecheck"
)

const (
	// traefikNamespace is the namespace examples/kubernetes.yaml installs
	// Traefik's chart into: its Secrets are consumed by Traefik's pod.
	traefikNamespace = "traefik"
	// examplePluginName is the plugin's key in Traefik's configuration
	// (experimental.plugins.<name>, a Middleware's spec.plugin.<name>).
	examplePluginName = "llmgateway"
	// examplePluginModule is the plugin's module name in the catalog.
	examplePluginModule = "github.com/llmgateway/llmgateway"
)

// traefikChartValues mirrors the keys of Traefik's Helm chart values
// (traefik/traefik-helm-chart, traefik/values.yaml) that
// examples/traefik-helm-values.yaml sets. A chart's values have no Go type;
// this mirror uses the chart's key names and, below them, the real types the
// chart passes through (Traefik's plugin descriptor, Kubernetes EnvVar,
// Volume, VolumeMount), so strict decoding catches a misspelt or misplaced
// key. Add a field here before using another chart key in the example.
type traefikChartValues struct {
	Experimental struct {
		Plugins map[string]plugins.Descriptor `json:"plugins"`
	} `json:"experimental"`
	Env        []corev1.EnvVar `json:"env"`
	Deployment struct {
		AdditionalVolumes []corev1.Volume `json:"additionalVolumes"`
	} `json:"deployment"`
	AdditionalVolumeMounts []corev1.VolumeMount `json:"additionalVolumeMounts"`
}

var releaseTag = regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+$`)

// onlyOne returns the single value of a map, failing unless there is
// exactly one.
func onlyOne[T any](t *testing.T, what string, m map[string]*T) *T {
	t.Helper()
	require.Len(t, m, 1, "exactly one %s", what)
	for _, v := range m {
		return v
	}
	return nil
}

// pluginBlock converts a Middleware's spec.plugin the way Traefik's CRD
// provider does (JSON round trip into dynamic.PluginConf) and returns the
// llmgateway block.
func pluginBlock(t *testing.T, mw *traefikv1alpha1.Middleware) map[string]interface{} {
	t.Helper()
	require.Len(t, mw.Spec.Plugin, 1, "Middleware %s: one plugin", mw.Name)
	data, err := json.Marshal(mw.Spec.Plugin)
	require.NoError(t, err)
	confs := map[string]dynamic.PluginConf{}
	require.NoError(t, json.Unmarshal(data, &confs))
	block, ok := confs[examplePluginName]
	require.True(t, ok, "Middleware %s: spec.plugin.%s", mw.Name, examplePluginName)
	// The CRD provider would replace urn:k8s:secret: values from Secrets;
	// the example uses env: secrets instead.
	require.NotContains(t, string(data), "urn:k8s:secret:")
	return block
}

// TestExampleKubernetesPlugin checks examples/kubernetes.yaml and
// examples/traefik-helm-values.yaml: every object decodes strictly into
// its real type, every reference resolves inside the manifest, the users
// Secret is a whole-volume mount, and the Middleware's plugin block
// decodes with the gateway's own decoder and builds a gateway that
// answers a users-file key.
func TestExampleKubernetesPlugin(t *testing.T) {
	m := loadManifest(t, "kubernetes.yaml")
	m.checkNamespaces(t)
	require.Contains(t, m.text, "--namespace "+traefikNamespace, "the install step names Traefik's namespace")
	require.Contains(t, m.text, "examples/traefik-helm-values.yaml")

	data, err := os.ReadFile(filepath.Join(examplesDir(t), "traefik-helm-values.yaml"))
	require.NoError(t, err)
	var values traefikChartValues
	require.NoError(t, examplecheck.DecodeStrictYAML(data, &values), "traefik-helm-values.yaml")
	require.Len(t, values.Experimental.Plugins, 1)
	descriptor, ok := values.Experimental.Plugins[examplePluginName]
	require.True(t, ok, "experimental.plugins.%s", examplePluginName)
	assert.Equal(t, examplePluginModule, descriptor.ModuleName)
	assert.Regexp(t, releaseTag, descriptor.Version)

	// Traefik's pod, as the chart builds it from the values.
	traefikPod := &podResolver{
		m: m, namespace: traefikNamespace,
		volumes: values.Deployment.AdditionalVolumes, mounts: values.AdditionalVolumeMounts, env: values.Env,
	}
	traefikPod.check(t)
	for _, e := range values.Env {
		require.NotNil(t, e.ValueFrom, "env %s: provider keys come from a Secret, not a literal", e.Name)
	}

	mw := onlyOne(t, "Middleware", m.middlewares)
	block := pluginBlock(t, mw)
	cfg, err := gateway.ConfigFromMap(block)
	require.NoError(t, err)
	require.NotNil(t, cfg.Users)
	require.NotEmpty(t, cfg.Users.File, "the example keeps its users in a Secret")
	usersFile := traefikPod.file(t, cfg.Users.File)
	assert.NotNil(t, cfg.Redis, "the example shares counters through Redis")
	assert.True(t, cfg.Admin != nil && cfg.Admin.Enabled, "the example enables the admin API")

	gw := buildExampleGateway(t, exampleGateway{cfg: cfg, document: block, env: traefikPod.environment(t), usersFile: usersFile})
	requireModels(t, gw, usersFileKey(t, usersFile, "alice"), "gpt-5-mini", "anthropic/claude-sonnet-4-5", "claude-opus-4-5")

	backend := onlyOne(t, "Deployment", m.deployments)
	backendPod := &podResolver{m: m, namespace: backend.Namespace, volumes: backend.Spec.Template.Spec.Volumes}
	for _, c := range backend.Spec.Template.Spec.Containers {
		backendPod.mounts = append(backendPod.mounts, c.VolumeMounts...)
		backendPod.env = append(backendPod.env, c.Env...)
	}
	backendPod.check(t)
	checkServiceSelectsDeployment(t, onlyOne(t, "Service", m.services), backend)

	ir := onlyOne(t, "IngressRoute", m.ingressRoutes)
	m.checkIngressRoute(t, ir)
	require.Len(t, ir.Spec.Routes, 1)
	route := ir.Spec.Routes[0]
	require.Len(t, route.Middlewares, 1)
	assert.Equal(t, mw.Name, route.Middlewares[0].Name)
	assert.Equal(t, "Host(`llm.example.com`)", route.Match)
}

// TestExampleKubernetesBinary checks examples/kubernetes-binary.yaml: strict
// decoding, references, the checksum annotation, the probes against the
// binary's own paths and port, a startup budget for the discovery warm
// fill, a grace period covering the binary's drain and shutdown, the
// ServersTransport without a response-header deadline, and the
// ConfigMap's config building a gateway.
func TestExampleKubernetesBinary(t *testing.T) {
	m := loadManifest(t, "kubernetes-binary.yaml")
	m.checkNamespaces(t)
	d := onlyOne(t, "Deployment", m.deployments)
	spec := d.Spec.Template.Spec
	require.Len(t, spec.Containers, 1)
	c := spec.Containers[0]
	require.NotEmpty(t, c.Image)
	require.Empty(t, c.Command, "the image's entrypoint is the binary; pass flags as args")

	pod := &podResolver{m: m, namespace: d.Namespace, volumes: spec.Volumes, mounts: c.VolumeMounts, env: c.Env, envFrom: c.EnvFrom}
	pod.check(t)
	env := pod.environment(t)
	settings := parseBinarySettings(t, c.Args, env)
	cfg, doc := decodeBinaryConfig(t, pod.file(t, settings.config))

	cm := onlyOne(t, "ConfigMap", m.configMaps)
	sum, err := examplecheck.Checksum(cm.Data)
	require.NoError(t, err)
	require.Equal(t, sum, d.Spec.Template.Annotations[examplecheck.ChecksumAnnotation],
		"the checksum annotation is stale: run make examples-checksum")

	// What differs from the plugin form.
	assert.False(t, cfg.PassthroughUnknown, "passthroughUnknown has no meaning in the binary")
	assert.True(t, cfg.Metrics == nil || len(cfg.Metrics.AllowedCIDRs) == 0, "behind Traefik every peer is Traefik: no metrics.allowedCIDRs")
	assert.NotEmpty(t, cfg.TrustedProxies, "behind Traefik, trustedProxies names Traefik")
	require.NotNil(t, cfg.Users)
	usersFile := pod.file(t, cfg.Users.File)
	discovering := discoveringProviders(cfg)
	require.Positive(t, discovering, "the example shows a discovering provider (what the startupProbe is sized for)")

	gw := buildExampleGateway(t, exampleGateway{cfg: cfg, document: doc, env: env, usersFile: usersFile})
	requireModels(t, gw, usersFileKey(t, usersFile, "alice"), "gpt-5-mini", "claude-sonnet-4-5", "discovered-vllm")

	// Probes: the binary's own paths on the port it listens on.
	_, listenPort, err := net.SplitHostPort(settings.listen)
	require.NoError(t, err)
	require.NotNil(t, c.LivenessProbe)
	require.NotNil(t, c.ReadinessProbe)
	require.NotNil(t, c.StartupProbe)
	for name, probe := range map[string]*corev1.Probe{"liveness": c.LivenessProbe, "readiness": c.ReadinessProbe, "startup": c.StartupProbe} {
		assert.Equal(t, listenPort, strconv.Itoa(int(containerPort(t, c, probe))), "%s probe port", name)
	}
	assert.Equal(t, settings.healthPath, c.LivenessProbe.HTTPGet.Path)
	assert.Equal(t, settings.healthPath, c.StartupProbe.HTTPGet.Path)
	assert.Equal(t, settings.readyPath, c.ReadinessProbe.HTTPGet.Path)
	assert.Equal(t, "/healthz", settings.healthPath)
	assert.Equal(t, "/readyz", settings.readyPath)
	startup := c.StartupProbe
	budget := time.Duration(startup.InitialDelaySeconds+startup.PeriodSeconds*startup.FailureThreshold) * time.Second
	assert.GreaterOrEqual(t, budget, time.Duration(discovering)*warmFillBound+10*time.Second,
		"the startupProbe must outlast the discovery warm fill (%d discovering providers × %s)", discovering, warmFillBound)
	assert.Zero(t, c.LivenessProbe.InitialDelaySeconds, "the startupProbe holds liveness back, not a delay")

	// Shutdown: readiness fails, -drain-delay, then up to -shutdown-timeout.
	require.NotNil(t, spec.TerminationGracePeriodSeconds)
	grace := time.Duration(*spec.TerminationGracePeriodSeconds) * time.Second
	assert.GreaterOrEqual(t, grace, settings.shutdownTimeout+settings.drainDelay+5*time.Second,
		"terminationGracePeriodSeconds covers -drain-delay + -shutdown-timeout with a margin")

	checkRestrictedSecurity(t, spec, c)
	checkServiceSelectsDeployment(t, onlyOne(t, "Service", m.services), d)

	st := onlyOne(t, "ServersTransport", m.serversTransports)
	require.NotNil(t, st.Spec.ForwardingTimeouts)
	rht := st.Spec.ForwardingTimeouts.ResponseHeaderTimeout
	require.NotNil(t, rht, "responseHeaderTimeout is set explicitly")
	// The CRD provider's conversion (pkg/provider/kubernetes/crd).
	var timeout ptypes.Duration
	require.NoError(t, timeout.Set(rht.String()))
	assert.Zero(t, timeout, "no response-header deadline on a long generation")

	ir := onlyOne(t, "IngressRoute", m.ingressRoutes)
	m.checkIngressRoute(t, ir)
	require.Len(t, ir.Spec.Routes, 1)
	route := ir.Spec.Routes[0]
	require.Len(t, route.Services, 1)
	assert.Equal(t, st.Name, route.Services[0].ServersTransport)
	assert.True(t, strings.HasPrefix(route.Match, "Host(`llm.example.com`) && "), route.Match)
	requireRuleExcludes(t, route.Match, settings.healthPath, settings.readyPath)
}

// checkRestrictedSecurity requires a non-root pod with a read-only root
// filesystem and no privilege escalation or capabilities.
func checkRestrictedSecurity(t *testing.T, spec corev1.PodSpec, c corev1.Container) {
	t.Helper()
	require.NotNil(t, spec.SecurityContext)
	require.NotNil(t, spec.SecurityContext.RunAsNonRoot)
	assert.True(t, *spec.SecurityContext.RunAsNonRoot)
	require.NotNil(t, spec.SecurityContext.RunAsUser)
	assert.NotZero(t, *spec.SecurityContext.RunAsUser)
	require.NotNil(t, c.SecurityContext)
	require.NotNil(t, c.SecurityContext.ReadOnlyRootFilesystem)
	assert.True(t, *c.SecurityContext.ReadOnlyRootFilesystem)
	require.NotNil(t, c.SecurityContext.AllowPrivilegeEscalation)
	assert.False(t, *c.SecurityContext.AllowPrivilegeEscalation)
	require.NotNil(t, c.SecurityContext.Capabilities)
	assert.Equal(t, []corev1.Capability{"ALL"}, c.SecurityContext.Capabilities.Drop)
}

// TestExampleManifestDecodingIsStrict shows the checks above can fail: a
// misspelt, miscased or duplicated field, an unknown kind, and a misspelt
// gateway key are each refused.
func TestExampleManifestDecodingIsStrict(t *testing.T) {
	cases := map[string]struct{ doc, want string }{
		"unknown field": {
			doc:  "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x, namespace: ns}\nspec:\n  replica: 2\n",
			want: `unknown field "spec.replica"`,
		},
		"miscased field": {
			doc:  "apiVersion: v1\nkind: Secret\nmetadata: {name: x, namespace: ns}\nStringData: {a: b}\n",
			want: `unknown field "StringData"`,
		},
		"duplicate field": {
			doc:  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: ns}\ndata: {a: b}\ndata: {c: d}\n",
			want: `key "data" already set in map`,
		},
		"unknown kind": {
			doc:  "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\n",
			want: `no type for apiVersion "v1" kind "Pod"`,
		},
		"traefik CRD field": {
			doc:  "apiVersion: traefik.io/v1alpha1\nkind: ServersTransport\nmetadata: {name: x, namespace: ns}\nspec:\n  forwardingTimeouts: {responseHeaderTimeOut: 0}\n",
			want: `unknown field "spec.forwardingTimeouts.responseHeaderTimeOut"`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := decodeManifest([]byte(tc.doc))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	t.Run("chart values key", func(t *testing.T) {
		var values traefikChartValues
		err := examplecheck.DecodeStrictYAML([]byte("deployment:\n  additionalVolumeMounts: []\n"), &values)
		require.Error(t, err)
		assert.Contains(t, err.Error(), `unknown field "deployment.additionalVolumeMounts"`)
	})
	t.Run("gateway key", func(t *testing.T) {
		_, err := gateway.ConfigFromMap(map[string]interface{}{
			"providers": map[string]interface{}{"openai": map[string]interface{}{"type": "openai", "apiKeys": "env:X"}},
		})
		require.Error(t, err)
		assert.Contains(t, err.Error(), `providers.openai: unknown config key "apiKeys"`)
	})
	t.Run("subPath mount", func(t *testing.T) {
		m, err := decodeManifest([]byte("apiVersion: v1\nkind: Secret\nmetadata: {name: users, namespace: ns}\nstringData: {users.json: '{}'}\n"))
		require.NoError(t, err)
		pod := &podResolver{
			m: m, namespace: "ns",
			volumes: []corev1.Volume{{Name: "users", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "users"}}}},
			mounts:  []corev1.VolumeMount{{Name: "users", MountPath: "/llmgw/users/users.json", SubPath: "users.json", ReadOnly: true}},
		}
		assert.Equal(t, []string{"mount /llmgw/users/users.json uses subPath: mount the whole volume"}, pod.problems())
	})
}
