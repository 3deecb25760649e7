package integration_test

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	traefikv1alpha1 "github.com/traefik/traefik/v3/pkg/provider/kubernetes/crd/traefikio/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/llmgateway/llmgateway/integration/examplecheck"
)

// examplesDir is the repository's examples/ directory (tests run in
// integration/).
func examplesDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "examples"))
	require.NoError(t, err)
	return dir
}

// repoRoot is the repository's root directory.
func repoRoot(t *testing.T) string {
	t.Helper()
	return filepath.Dir(examplesDir(t))
}

// manifest is a Kubernetes manifest stream decoded into the real API types,
// indexed by namespace/name.
type manifest struct {
	text              string
	namespaces        map[string]*corev1.Namespace
	secrets           map[string]*corev1.Secret
	configMaps        map[string]*corev1.ConfigMap
	services          map[string]*corev1.Service
	deployments       map[string]*appsv1.Deployment
	middlewares       map[string]*traefikv1alpha1.Middleware
	ingressRoutes     map[string]*traefikv1alpha1.IngressRoute
	serversTransports map[string]*traefikv1alpha1.ServersTransport
}

func objectKey(namespace, name string) string { return namespace + "/" + name }

// decodeManifest decodes every document strictly (unknown or duplicated
// fields fail, field names are case-sensitive) into the type its
// apiVersion and kind name; an unknown kind fails.
func decodeManifest(data []byte) (*manifest, error) {
	docs, err := examplecheck.Split(data)
	if err != nil {
		return nil, err
	}
	m := &manifest{
		text:              string(data),
		namespaces:        map[string]*corev1.Namespace{},
		secrets:           map[string]*corev1.Secret{},
		configMaps:        map[string]*corev1.ConfigMap{},
		services:          map[string]*corev1.Service{},
		deployments:       map[string]*appsv1.Deployment{},
		middlewares:       map[string]*traefikv1alpha1.Middleware{},
		ingressRoutes:     map[string]*traefikv1alpha1.IngressRoute{},
		serversTransports: map[string]*traefikv1alpha1.ServersTransport{},
	}
	for _, d := range docs {
		var obj interface{}
		k := objectKey(d.Namespace, d.Name)
		switch d.APIVersion + " " + d.Kind {
		case "v1 Namespace":
			v := &corev1.Namespace{}
			obj, m.namespaces[d.Name] = v, v
		case "v1 Secret":
			v := &corev1.Secret{}
			obj, m.secrets[k] = v, v
		case "v1 ConfigMap":
			v := &corev1.ConfigMap{}
			obj, m.configMaps[k] = v, v
		case "v1 Service":
			v := &corev1.Service{}
			obj, m.services[k] = v, v
		case "apps/v1 Deployment":
			v := &appsv1.Deployment{}
			obj, m.deployments[k] = v, v
		case "traefik.io/v1alpha1 Middleware":
			v := &traefikv1alpha1.Middleware{}
			obj, m.middlewares[k] = v, v
		case "traefik.io/v1alpha1 IngressRoute":
			v := &traefikv1alpha1.IngressRoute{}
			obj, m.ingressRoutes[k] = v, v
		case "traefik.io/v1alpha1 ServersTransport":
			v := &traefikv1alpha1.ServersTransport{}
			obj, m.serversTransports[k] = v, v
		default:
			return nil, fmt.Errorf("document %d: no type for apiVersion %q kind %q", d.Index, d.APIVersion, d.Kind)
		}
		if err := d.DecodeStrict(obj); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// loadManifest reads and decodes examples/<name>.
func loadManifest(t *testing.T, name string) *manifest {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(examplesDir(t), name))
	require.NoError(t, err)
	m, err := decodeManifest(data)
	require.NoError(t, err, name)
	return m
}

// checkNamespaces requires every namespaced object's namespace to be
// declared by the manifest and every object to name one.
func (m *manifest) checkNamespaces(t *testing.T) {
	t.Helper()
	var keys []string
	for k := range m.secrets {
		keys = append(keys, k)
	}
	for k := range m.configMaps {
		keys = append(keys, k)
	}
	for k := range m.services {
		keys = append(keys, k)
	}
	for k := range m.deployments {
		keys = append(keys, k)
	}
	for k := range m.middlewares {
		keys = append(keys, k)
	}
	for k := range m.ingressRoutes {
		keys = append(keys, k)
	}
	for k := range m.serversTransports {
		keys = append(keys, k)
	}
	for _, k := range keys {
		ns := strings.SplitN(k, "/", 2)[0]
		require.NotEmpty(t, ns, "%s names no namespace", k)
		require.Contains(t, m.namespaces, ns, "%s: namespace %s is not in the manifest", k, ns)
	}
}

// secretData is a Secret's content as the API server stores it: data,
// with stringData merged over it.
func secretData(s *corev1.Secret) map[string]string {
	out := map[string]string{}
	for k, v := range s.Data {
		out[k] = string(v)
	}
	for k, v := range s.StringData {
		out[k] = v
	}
	return out
}

// podResolver resolves what one container of a pod sees — environment
// variables and mounted files — through the manifest's Secrets and
// ConfigMaps in the pod's namespace.
type podResolver struct {
	m         *manifest
	namespace string
	volumes   []corev1.Volume
	mounts    []corev1.VolumeMount
	env       []corev1.EnvVar
	envFrom   []corev1.EnvFromSource
}

// check requires every reference to exist (see problems).
func (p *podResolver) check(t *testing.T) {
	t.Helper()
	require.Empty(t, p.problems())
}

// problems lists the pod's broken references: volumes must name manifest
// Secrets/ConfigMaps (whole, no items projection), mounts must name volumes,
// be read-only and never use subPath, env and envFrom must name existing
// Secrets/ConfigMaps and keys.
func (p *podResolver) problems() []string {
	var out []string
	add := func(format string, args ...interface{}) { out = append(out, fmt.Sprintf(format, args...)) }
	volumes := map[string]bool{}
	for _, v := range p.volumes {
		volumes[v.Name] = true
		switch {
		case v.Secret != nil:
			if p.m.secrets[objectKey(p.namespace, v.Secret.SecretName)] == nil {
				add("volume %s: Secret %s/%s is not in the manifest", v.Name, p.namespace, v.Secret.SecretName)
			}
			if len(v.Secret.Items) > 0 {
				add("volume %s projects single keys; mount the whole Secret", v.Name)
			}
		case v.ConfigMap != nil:
			if p.m.configMaps[objectKey(p.namespace, v.ConfigMap.Name)] == nil {
				add("volume %s: ConfigMap %s/%s is not in the manifest", v.Name, p.namespace, v.ConfigMap.Name)
			}
			if len(v.ConfigMap.Items) > 0 {
				add("volume %s projects single keys; mount the whole ConfigMap", v.Name)
			}
		default:
			add("volume %s: only Secret and ConfigMap volumes are expected", v.Name)
		}
	}
	for _, mt := range p.mounts {
		if !volumes[mt.Name] {
			add("mount %s names no volume", mt.MountPath)
		}
		// A subPath mount is bound once at pod start: the kubelet never
		// updates it, so a Secret or ConfigMap change never reaches it.
		if mt.SubPath != "" || mt.SubPathExpr != "" {
			add("mount %s uses subPath: mount the whole volume", mt.MountPath)
		}
		if !mt.ReadOnly {
			add("mount %s should be read-only", mt.MountPath)
		}
	}
	for _, e := range p.env {
		switch {
		case e.ValueFrom == nil:
		case e.ValueFrom.SecretKeyRef != nil:
			ref := e.ValueFrom.SecretKeyRef
			if s := p.m.secrets[objectKey(p.namespace, ref.Name)]; s == nil {
				add("env %s: Secret %s/%s is not in the manifest", e.Name, p.namespace, ref.Name)
			} else if _, ok := secretData(s)[ref.Key]; !ok {
				add("env %s: Secret %s has no key %s", e.Name, ref.Name, ref.Key)
			}
		case e.ValueFrom.ConfigMapKeyRef != nil:
			ref := e.ValueFrom.ConfigMapKeyRef
			if cm := p.m.configMaps[objectKey(p.namespace, ref.Name)]; cm == nil {
				add("env %s: ConfigMap %s/%s is not in the manifest", e.Name, p.namespace, ref.Name)
			} else if _, ok := cm.Data[ref.Key]; !ok {
				add("env %s: ConfigMap %s has no key %s", e.Name, ref.Name, ref.Key)
			}
		default:
			add("env %s: only secretKeyRef and configMapKeyRef are expected", e.Name)
		}
	}
	for _, ef := range p.envFrom {
		switch {
		case ef.SecretRef != nil && p.m.secrets[objectKey(p.namespace, ef.SecretRef.Name)] == nil:
			add("envFrom: Secret %s/%s is not in the manifest", p.namespace, ef.SecretRef.Name)
		case ef.ConfigMapRef != nil && p.m.configMaps[objectKey(p.namespace, ef.ConfigMapRef.Name)] == nil:
			add("envFrom: ConfigMap %s/%s is not in the manifest", p.namespace, ef.ConfigMapRef.Name)
		}
	}
	return out
}

// environment is the container's environment variables with their values.
func (p *podResolver) environment(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, ef := range p.envFrom {
		switch {
		case ef.SecretRef != nil:
			for k, v := range secretData(p.m.secrets[objectKey(p.namespace, ef.SecretRef.Name)]) {
				out[ef.Prefix+k] = v
			}
		case ef.ConfigMapRef != nil:
			for k, v := range p.m.configMaps[objectKey(p.namespace, ef.ConfigMapRef.Name)].Data {
				out[ef.Prefix+k] = v
			}
		}
	}
	for _, e := range p.env {
		switch {
		case e.ValueFrom == nil:
			out[e.Name] = e.Value
		case e.ValueFrom.SecretKeyRef != nil:
			out[e.Name] = secretData(p.m.secrets[objectKey(p.namespace, e.ValueFrom.SecretKeyRef.Name)])[e.ValueFrom.SecretKeyRef.Key]
		case e.ValueFrom.ConfigMapKeyRef != nil:
			out[e.Name] = p.m.configMaps[objectKey(p.namespace, e.ValueFrom.ConfigMapKeyRef.Name)].Data[e.ValueFrom.ConfigMapKeyRef.Key]
		}
	}
	return out
}

// file returns the content the container reads at an absolute path: the
// key of the Secret or ConfigMap volume mounted at the path's directory.
func (p *podResolver) file(t *testing.T, filePath string) string {
	t.Helper()
	require.True(t, path.IsAbs(filePath), "%s is not absolute", filePath)
	var mount *corev1.VolumeMount
	for i := range p.mounts {
		mt := &p.mounts[i]
		if strings.HasPrefix(filePath, strings.TrimSuffix(mt.MountPath, "/")+"/") && (mount == nil || len(mt.MountPath) > len(mount.MountPath)) {
			mount = mt
		}
	}
	require.NotNil(t, mount, "no volume is mounted at %s's directory", filePath)
	name := strings.TrimPrefix(filePath, strings.TrimSuffix(mount.MountPath, "/")+"/")
	for _, v := range p.volumes {
		if v.Name != mount.Name {
			continue
		}
		switch {
		case v.Secret != nil:
			data := secretData(p.m.secrets[objectKey(p.namespace, v.Secret.SecretName)])
			require.Contains(t, data, name, "Secret %s (mounted at %s) has no key %s", v.Secret.SecretName, mount.MountPath, name)
			return data[name]
		case v.ConfigMap != nil:
			data := p.m.configMaps[objectKey(p.namespace, v.ConfigMap.Name)].Data
			require.Contains(t, data, name, "ConfigMap %s (mounted at %s) has no key %s", v.ConfigMap.Name, mount.MountPath, name)
			return data[name]
		}
	}
	t.Fatalf("mount %s names no volume", mount.MountPath)
	return ""
}

// checkIngressRoute requires every middleware, service (and its port) and
// serversTransport an IngressRoute names to exist in its namespace.
func (m *manifest) checkIngressRoute(t *testing.T, ir *traefikv1alpha1.IngressRoute) {
	t.Helper()
	ns := ir.Namespace
	require.NotEmpty(t, ir.Spec.Routes, "IngressRoute %s has no routes", ir.Name)
	for _, r := range ir.Spec.Routes {
		require.Equal(t, "Rule", r.Kind)
		for _, mw := range r.Middlewares {
			mwNS := mw.Namespace
			if mwNS == "" {
				mwNS = ns
			}
			require.Equal(t, ns, mwNS, "a cross-namespace middleware needs allowCrossNamespace")
			require.Contains(t, m.middlewares, objectKey(mwNS, mw.Name), "IngressRoute %s: middleware", ir.Name)
		}
		require.NotEmpty(t, r.Services, "IngressRoute %s: a route needs a service", ir.Name)
		for _, s := range r.Services {
			svc := m.services[objectKey(ns, s.Name)]
			require.NotNil(t, svc, "IngressRoute %s: Service %s/%s is not in the manifest", ir.Name, ns, s.Name)
			found := false
			for _, p := range svc.Spec.Ports {
				if (s.Port.IntVal != 0 && p.Port == s.Port.IntVal) || (s.Port.StrVal != "" && p.Name == s.Port.StrVal) {
					found = true
				}
			}
			require.True(t, found, "IngressRoute %s: Service %s has no port %s", ir.Name, s.Name, s.Port.String())
			if s.ServersTransport != "" {
				require.Contains(t, m.serversTransports, objectKey(ns, s.ServersTransport), "IngressRoute %s: serversTransport", ir.Name)
			}
		}
	}
}

// checkServiceSelectsDeployment requires the Service to select the
// Deployment's pods and each target port to be one of the container's.
func checkServiceSelectsDeployment(t *testing.T, svc *corev1.Service, d *appsv1.Deployment) {
	t.Helper()
	require.NotEmpty(t, svc.Spec.Selector)
	for k, v := range svc.Spec.Selector {
		require.Equal(t, v, d.Spec.Template.Labels[k], "Service %s selector %s", svc.Name, k)
	}
	for k, v := range d.Spec.Selector.MatchLabels {
		require.Equal(t, v, d.Spec.Template.Labels[k], "Deployment %s selector %s", d.Name, k)
	}
	for _, p := range svc.Spec.Ports {
		found := false
		for _, c := range d.Spec.Template.Spec.Containers {
			for _, cp := range c.Ports {
				if (p.TargetPort.StrVal != "" && cp.Name == p.TargetPort.StrVal) || (p.TargetPort.IntVal != 0 && cp.ContainerPort == p.TargetPort.IntVal) {
					found = true
				}
			}
		}
		require.True(t, found, "Service %s: target port %s is no container port of %s", svc.Name, p.TargetPort.String(), d.Name)
	}
}

// containerPort resolves a probe's port (a number or a port name).
func containerPort(t *testing.T, c corev1.Container, probe *corev1.Probe) int32 {
	t.Helper()
	require.NotNil(t, probe.HTTPGet, "container %s: an HTTP probe", c.Name)
	if probe.HTTPGet.Port.StrVal == "" {
		return probe.HTTPGet.Port.IntVal
	}
	for _, p := range c.Ports {
		if p.Name == probe.HTTPGet.Port.StrVal {
			return p.ContainerPort
		}
	}
	t.Fatalf("container %s has no port named %s", c.Name, probe.HTTPGet.Port.StrVal)
	return 0
}
