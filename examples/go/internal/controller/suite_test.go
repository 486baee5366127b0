package controller

import (
	"context"
	"os"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// These tests use Ginkgo (BDD-style Go testing framework) and envtest, as kubebuilder scaffolds them. With
// USE_EXISTING_CLUSTER=true envtest starts no kube-apiserver nor etcd: it takes the cluster KUBECONFIG names
// (controller-runtime pkg/envtest/server.go, Environment.Start and useExistingCluster), waits for its default
// namespace and installs the CRDs of CRDDirectoryPaths there. Without it, envtest starts the binaries of
// KUBEBUILDER_ASSETS.
//
// SECRET_OPERATOR_FIXED=1 runs the fixed secret controller (a deterministic name, AlreadyExists read as done);
// the default is the controller as it ships, with its cache-lag bug.

var (
	cfg       *rest.Config
	k8sClient client.Client
	testEnv   *envtest.Environment
	ctx       context.Context
	cancel    context.CancelFunc
)

func TestControllers(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Controller Suite")
}

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	ctx, cancel = context.WithCancel(context.TODO())

	By("bootstrapping test environment")
	testEnv = &envtest.Environment{
		// The reconcilers use built-in kinds only: the CRD of config/crd/bases is the webhooks' (internal/webhook/v1),
		// and installing it here would only add requests to every run of this suite.
	}
	var err error
	cfg, err = testEnv.Start()
	Expect(err).NotTo(HaveOccurred())
	Expect(cfg).NotTo(BeNil())

	k8sClient, err = client.New(cfg, client.Options{Scheme: scheme.Scheme})
	Expect(err).NotTo(HaveOccurred())
	Expect(k8sClient).NotTo(BeNil())

	By("starting the manager with the reconcilers")
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:  scheme.Scheme,
		Metrics: metricsserver.Options{BindAddress: "0"},
	})
	Expect(err).NotTo(HaveOccurred())
	fixed := os.Getenv("SECRET_OPERATOR_FIXED") == "1"
	Expect((&SecretReconciler{Client: mgr.GetClient(), Scheme: mgr.GetScheme(),
		Recorder: mgr.GetEventRecorder("secret-operator"), Fixed: fixed}).SetupWithManager(mgr)).To(Succeed())
	Expect((&OrphanReconciler{Client: mgr.GetClient(),
		Recorder: mgr.GetEventRecorder("secret-operator")}).SetupWithManager(mgr)).To(Succeed())
	go func() {
		defer GinkgoRecover()
		Expect(mgr.Start(ctx)).To(Succeed(), "failed to run manager")
	}()
})

var _ = AfterSuite(func() {
	By("tearing down the test environment")
	cancel()
	Expect(testEnv.Stop()).To(Succeed())
})
