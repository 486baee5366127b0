package v1

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"path/filepath"
	"testing"
	"time"

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
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	secretsv1 "example.com/race-harness/examples/go/api/v1"
)

// These tests use Ginkgo and envtest as kubebuilder scaffolds a webhook suite. envtest installs the CRD of
// config/crd/bases and waits until discovery lists it (pkg/envtest/crd.go, WaitForCRDs), then installs the
// webhook configurations of config/webhook: it swaps each clientConfig.service for a URL on its own loopback host
// and port and sets a caBundle of a CA it made, whose serving certificate it writes to LocalServingCertDir
// (pkg/envtest/webhook.go, ModifyWebhookDefinitions and setupCA). The manager below serves the webhooks there, so
// every create or update of a GeneratedSecret goes from the apiserver to this process and back. With
// USE_EXISTING_CLUSTER=true the apiserver is the cluster KUBECONFIG names.

var (
	cfg       *rest.Config
	k8sClient client.Client
	testEnv   *envtest.Environment
	ctx       context.Context
	cancel    context.CancelFunc
)

func TestWebhooks(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Webhook Suite")
}

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	ctx, cancel = context.WithCancel(context.TODO())

	Expect(secretsv1.AddToScheme(scheme.Scheme)).To(Succeed())

	By("bootstrapping test environment")
	testEnv = &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join("..", "..", "..", "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		WebhookInstallOptions: envtest.WebhookInstallOptions{
			Paths: []string{filepath.Join("..", "..", "..", "config", "webhook")},
		},
	}
	var err error
	cfg, err = testEnv.Start()
	Expect(err).NotTo(HaveOccurred())
	Expect(cfg).NotTo(BeNil())

	k8sClient, err = client.New(cfg, client.Options{Scheme: scheme.Scheme})
	Expect(err).NotTo(HaveOccurred())
	Expect(k8sClient).NotTo(BeNil())

	By("starting the manager with the webhook server")
	webhookInstallOptions := &testEnv.WebhookInstallOptions
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme: scheme.Scheme,
		WebhookServer: webhook.NewServer(webhook.Options{
			Host:    webhookInstallOptions.LocalServingHost,
			Port:    webhookInstallOptions.LocalServingPort,
			CertDir: webhookInstallOptions.LocalServingCertDir,
		}),
		LeaderElection: false,
		Metrics:        metricsserver.Options{BindAddress: "0"},
	})
	Expect(err).NotTo(HaveOccurred())
	Expect(SetupGeneratedSecretWebhookWithManager(mgr)).To(Succeed())
	go func() {
		defer GinkgoRecover()
		Expect(mgr.Start(ctx)).To(Succeed(), "failed to run manager")
	}()

	By("waiting for the webhook server to take connections")
	dialer := &net.Dialer{Timeout: time.Second}
	addrPort := fmt.Sprintf("%s:%d", webhookInstallOptions.LocalServingHost, webhookInstallOptions.LocalServingPort)
	Eventually(func() error {
		conn, err := tls.DialWithDialer(dialer, "tcp", addrPort, &tls.Config{InsecureSkipVerify: true})
		if err != nil {
			return err
		}
		return conn.Close()
	}).Should(Succeed())
})

var _ = AfterSuite(func() {
	By("removing the webhook configurations")
	// envtest's Stop removes no webhook configuration from an existing cluster (pkg/envtest/server.go, Stop: CRDs
	// with CleanUpAfterUse, and its certificate folder). Left there, they name this process's port after it is
	// gone, and every later create of a GeneratedSecret in that cluster fails calling them (failurePolicy Fail).
	if k8sClient != nil { // (nil when BeforeSuite failed before making it)
		for _, hook := range testEnv.WebhookInstallOptions.MutatingWebhooks {
			Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, hook))).To(Succeed())
		}
		for _, hook := range testEnv.WebhookInstallOptions.ValidatingWebhooks {
			Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, hook))).To(Succeed())
		}
	}
	By("tearing down the test environment")
	cancel()
	Expect(testEnv.Stop()).To(Succeed())
})
