// Command goclient creates built-in objects through client-go's typed clients, as a Go controller
// does, and prints, for each, the object it sent (json.Marshal of the Go value), the Content-Type
// of the request that carried it, and the object the server answers a JSON GET with: the test
// (tests/kube/test_served_go_protobuf.py) compares the two, so every field of these kinds the Go
// types carry is checked through protobuf against what encoding/json writes for it.
//
// The config names no ContentType, so the typed clients send each body as
// application/vnd.kubernetes.protobuf (client-go gentype PrefersProtobuf, rest UseProtobufAsDefault).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
)

const ns = "default"

// contentTypes records the Content-Type of each request with a body, by method and path.
type contentTypes struct {
	mu   sync.Mutex
	seen map[string]string
	next http.RoundTripper
}

func (c *contentTypes) RoundTrip(req *http.Request) (*http.Response, error) {
	if ct := req.Header.Get("Content-Type"); ct != "" {
		c.mu.Lock()
		c.seen[req.Method+" "+req.URL.Path] = ct
		c.mu.Unlock()
	}
	return c.next.RoundTrip(req)
}

func (c *contentTypes) of(key string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.seen[key]
}

// result is one line of output.
type result struct {
	Kind        string          `json:"kind"`
	Name        string          `json:"name"`
	ContentType string          `json:"contentType"`
	Sent        json.RawMessage `json:"sent"`
	Stored      json.RawMessage `json:"stored"`
}

func main() {
	kubeconfig := flag.String("kubeconfig", "", "the kubeconfig of the served API")
	flag.Parse()
	config, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	must(err)
	recorded := &contentTypes{seen: map[string]string{}}
	config.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		recorded.next = rt
		return recorded
	}
	cs, err := kubernetes.NewForConfig(config)
	must(err)
	ctx := context.Background()
	out := json.NewEncoder(os.Stdout)

	report := func(kind, plural, prefix, name string, sent runtime.Object) {
		raw, err := json.Marshal(sent)
		must(err)
		path := fmt.Sprintf("%s/namespaces/%s/%s", prefix, ns, plural)
		stored, err := cs.CoreV1().RESTClient().Get().AbsPath(path, name).
			SetHeader("Accept", "application/json").DoRaw(ctx)
		must(err)
		must(out.Encode(result{kind, name, recorded.of("POST " + path), raw, stored}))
	}

	template := podTemplate()
	pod := &corev1.Pod{ObjectMeta: template.ObjectMeta, Spec: template.Spec}
	pod.Name = "web-0"
	_, err = cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	must(err)
	report("Pod", "pods", "/api/v1", pod.Name, pod)

	selector := &metav1.LabelSelector{
		MatchLabels: map[string]string{"app": "web"},
		MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"front", "edge"}}},
	}
	maxSurge, maxUnavailable := intstr.FromString("25%"), intstr.FromInt32(0)
	deployment := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: map[string]string{"app": "web"},
			Annotations: map[string]string{"example.com/note": "protobuf"}},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](3), Selector: selector, Template: template,
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &maxSurge, MaxUnavailable: &maxUnavailable}},
			MinReadySeconds: 5, RevisionHistoryLimit: ptr.To[int32](0), ProgressDeadlineSeconds: ptr.To[int32](600),
		},
	}
	created, err := cs.AppsV1().Deployments(ns).Create(ctx, deployment, metav1.CreateOptions{})
	must(err)
	report("Deployment", "deployments", "/apis/apps/v1", deployment.Name, deployment)

	replicaSet := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web-5d8f", OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: created.UID,
			Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](0), Selector: selector, Template: template},
	}
	_, err = cs.AppsV1().ReplicaSets(ns).Create(ctx, replicaSet, metav1.CreateOptions{})
	must(err)
	report("ReplicaSet", "replicasets", "/apis/apps/v1", replicaSet.Name, replicaSet)

	claim := corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: ptr.To("fast"),
			Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")}},
		},
	}
	statefulSet := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "db"},
		Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To[int32](2), Selector: selector, Template: template, ServiceName: "db",
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{claim},
			PodManagementPolicy:  appsv1.ParallelPodManagement,
			UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](1)}},
			PersistentVolumeClaimRetentionPolicy: &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
				WhenDeleted: appsv1.DeletePersistentVolumeClaimRetentionPolicyType,
				WhenScaled:  appsv1.RetainPersistentVolumeClaimRetentionPolicyType},
		},
	}
	_, err = cs.AppsV1().StatefulSets(ns).Create(ctx, statefulSet, metav1.CreateOptions{})
	must(err)
	report("StatefulSet", "statefulsets", "/apis/apps/v1", statefulSet.Name, statefulSet)

	jobTemplate := podTemplate()
	jobTemplate.Spec.RestartPolicy = corev1.RestartPolicyNever
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "migrate"},
		Spec: batchv1.JobSpec{
			Parallelism: ptr.To[int32](2), Completions: ptr.To[int32](4), BackoffLimit: ptr.To[int32](0),
			ActiveDeadlineSeconds: ptr.To[int64](600), TTLSecondsAfterFinished: ptr.To[int32](60),
			CompletionMode: ptr.To(batchv1.IndexedCompletion), Suspend: ptr.To(false),
			PodFailurePolicy: &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
				Action: batchv1.PodFailurePolicyActionFailJob,
				OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{
					Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{1, 42}}}}},
			Template: jobTemplate,
		},
	}
	_, err = cs.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{})
	must(err)
	report("Job", "jobs", "/apis/batch/v1", job.Name, job)

	service := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeNodePort, Selector: map[string]string{"app": "web"},
			Ports: []corev1.ServicePort{
				{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromString("http"),
					NodePort: 30080},
				{Name: "metrics", Protocol: corev1.ProtocolTCP, Port: 9090, TargetPort: intstr.FromInt32(9091),
					AppProtocol: ptr.To("http")}},
			SessionAffinity: corev1.ServiceAffinityClientIP,
			SessionAffinityConfig: &corev1.SessionAffinityConfig{
				ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: ptr.To[int32](10800)}},
			PublishNotReadyAddresses: true,
		},
	}
	_, err = cs.CoreV1().Services(ns).Create(ctx, service, metav1.CreateOptions{})
	must(err)
	report("Service", "services", "/api/v1", service.Name, service)

	configMap := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "settings", Finalizers: []string{"example.com/keep"}},
		Data:       map[string]string{"mode": "fast", "empty": ""},
		BinaryData: map[string][]byte{"blob": {0x00, 0xff, 0x10}},
		Immutable:  ptr.To(false),
	}
	_, err = cs.CoreV1().ConfigMaps(ns).Create(ctx, configMap, metav1.CreateOptions{})
	must(err)
	report("ConfigMap", "configmaps", "/api/v1", configMap.Name, configMap)

	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "tls"},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{"key": {0x00, 0x01, 0xfe, 0xff, 'k'}, "empty": {}},
	}
	_, err = cs.CoreV1().Secrets(ns).Create(ctx, secret, metav1.CreateOptions{})
	must(err)
	report("Secret", "secrets", "/api/v1", secret.Name, secret)

	budget := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromString("50%")), Selector: selector},
	}
	_, err = cs.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, budget, metav1.CreateOptions{})
	must(err)
	report("PodDisruptionBudget", "poddisruptionbudgets", "/apis/policy/v1", budget.Name, budget)

	revision := &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{Name: "db-7c9"},
		Data:       runtime.RawExtension{Raw: []byte(`{"spec":{"template":{"metadata":{"labels":{"app":"web"}}}}}`)},
		Revision:   2,
	}
	_, err = cs.AppsV1().ControllerRevisions(ns).Create(ctx, revision, metav1.CreateOptions{})
	must(err)
	report("ControllerRevision", "controllerrevisions", "/apis/apps/v1", revision.Name, revision)

	// a typed Delete sends its DeleteOptions as protobuf too; a precondition that fails is a Conflict
	err = cs.CoreV1().ConfigMaps(ns).Delete(ctx, configMap.Name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: ptr.To[types.UID]("not-its-uid")}})
	fmt.Printf("{\"delete\": %q, \"contentType\": %q}\n", fmt.Sprint(err),
		recorded.of("DELETE /api/v1/namespaces/default/configmaps/settings"))
}

// podTemplate is a populated pod: ports, env, resources with quantities, probes with IntOrString
// ports, volumes, tolerations, affinity and a security context.
func podTemplate() corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web", "tier": "front"}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name: "web", Image: "nginx:1.27", Command: []string{"nginx"}, Args: []string{"-g", "daemon off;"},
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP},
					{ContainerPort: 9091, HostPort: 0, Protocol: corev1.ProtocolUDP}},
				Env: []corev1.EnvVar{
					{Name: "MODE", Value: "fast"},
					{Name: "EMPTY"},
					{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{
						FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "status.podIP"}}},
					{Name: "LIMIT", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{
						ContainerName: "web", Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}}}},
				Resources: corev1.ResourceRequirements{
					Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m"),
						corev1.ResourceMemory: resource.MustParse("128Mi")},
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("0.25"),
						corev1.ResourceMemory: resource.MustParse("64M")}},
				VolumeMounts: []corev1.VolumeMount{{Name: "cache", MountPath: "/cache"},
					{Name: "config", MountPath: "/etc/web", ReadOnly: true}},
				LivenessProbe: &corev1.Probe{
					ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
						Path: "/healthz", Port: intstr.FromString("http"), Scheme: corev1.URISchemeHTTP,
						HTTPHeaders: []corev1.HTTPHeader{{Name: "X-Probe", Value: "1"}}}},
					InitialDelaySeconds: 3, PeriodSeconds: 10, FailureThreshold: 0},
				ReadinessProbe: &corev1.Probe{
					ProbeHandler:                  corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(8080)}},
					TerminationGracePeriodSeconds: ptr.To[int64](0)},
				SecurityContext: &corev1.SecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](1000),
					AllowPrivilegeEscalation: ptr.To(false),
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
				ImagePullPolicy: corev1.PullIfNotPresent,
			}},
			Volumes: []corev1.Volume{
				{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
					Medium: corev1.StorageMediumMemory, SizeLimit: ptr.To(resource.MustParse("1Gi"))}}},
				{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: "settings"},
					DefaultMode:          ptr.To[int32](0o644),
					Items:                []corev1.KeyToPath{{Key: "mode", Path: "mode.txt"}}}}}},
			Tolerations: []corev1.Toleration{{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists,
				Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)}},
			Affinity: &corev1.Affinity{
				NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
					NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{
						Key: "kubernetes.io/os", Operator: corev1.NodeSelectorOpIn, Values: []string{"linux"}}}}}}},
				PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
					Weight: 100, PodAffinityTerm: corev1.PodAffinityTerm{TopologyKey: "kubernetes.io/hostname",
						LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}}},
			},
			SecurityContext: &corev1.PodSecurityContext{FSGroup: ptr.To[int64](2000),
				SupplementalGroups: []int64{3000, 4000}},
			NodeSelector:                  map[string]string{"disk": "ssd"},
			TerminationGracePeriodSeconds: ptr.To[int64](30),
			RestartPolicy:                 corev1.RestartPolicyAlways,
			ServiceAccountName:            "web",
			AutomountServiceAccountToken:  ptr.To(false),
			PriorityClassName:             "high",
			Priority:                      ptr.To[int32](-5),
		},
	}
}

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "goclient:", err)
		os.Exit(1)
	}
}
