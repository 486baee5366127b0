// Command manager is a controller-runtime operator with a race, written as a Go
// developer writes one: flags, ctrl.GetConfigOrDie, ctrl.NewManager, leader
// election on by default, two controllers, an owned child kind and an
// EventRecorder. It uses built-in kinds only. The reconcilers are in
// internal/controller (kubebuilder's layout), where an envtest suite runs them.
//
// The secret controller gives every ConfigMap labelled app.example/want=secret
// one Secret (labelled app.example/owner=<ConfigMap name>, owned by it). The
// orphan controller deletes such a Secret once its ConfigMap is gone.
//
// The bug (--buggy, the default): the secret controller reads the Secrets from
// the manager's cache and, finding none, creates one with a generated name. The
// cache lags the controller's own write: the Secret's ADDED event arrives on the
// Secret informer's watch, which nothing orders against the ConfigMap
// informer's, so a reconcile triggered by an edit of the ConfigMap before that
// delivery sees no Secret and creates a second one. controller-runtime's own
// documentation names it ("the cache is eventually consistent"), and
// kube-controller-manager guards against it with expectations
// (pkg/controller/controller_utils.go, ControllerExpectations).
//
// The fix (--fixed): the pattern upstream controllers use where a child has one
// per owner, a deterministic name and AlreadyExists read as done
// (pkg/controller/deployment/sync.go, getNewReplicaSet, names the ReplicaSet
// from the template hash and handles AlreadyExists): two reconciles that both
// miss the cache ask for the same object, and the apiserver keeps one.
package main

import (
	"flag"
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"example.com/race-harness/examples/go/internal/controller"
)

var (
	scheme   = runtime.NewScheme()
	setupLog = ctrl.Log.WithName("setup")
)

func init() {
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
}

func main() {
	var (
		metricsAddr, probeAddr, namespace, leaderNamespace string
		leaderElect, fixed, buggy                          bool
	)
	flag.StringVar(&metricsAddr, "metrics-bind-address", "0", "The address the metrics endpoint binds to (0 disables it).")
	flag.StringVar(&probeAddr, "health-probe-bind-address", "0", "The address the health probes bind to (0 disables them).")
	flag.BoolVar(&leaderElect, "leader-elect", true, "Elect a leader (a Lease) before the controllers start.")
	flag.StringVar(&leaderNamespace, "leader-election-namespace", "default", "The namespace of the leader election Lease.")
	flag.StringVar(&namespace, "namespace", "", "Watch only this namespace (default: all).")
	flag.BoolVar(&fixed, "fixed", false, "Name the Secret deterministically and read AlreadyExists as done (the fix).")
	flag.BoolVar(&buggy, "buggy", false, "Create the Secret with a generated name when the cache has none (the default).")
	opts := zap.Options{Development: true}
	opts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))
	if fixed && buggy {
		setupLog.Error(nil, "--fixed and --buggy contradict each other: give one")
		os.Exit(2)
	}

	cacheOpts := cache.Options{}
	if namespace != "" {
		cacheOpts.DefaultNamespaces = map[string]cache.Config{namespace: {}}
	}
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		Scheme:                        scheme,
		Cache:                         cacheOpts,
		Metrics:                       metricsserver.Options{BindAddress: metricsAddr},
		HealthProbeBindAddress:        probeAddr,
		LeaderElection:                leaderElect,
		LeaderElectionID:              "secret-operator.app.example",
		LeaderElectionNamespace:       leaderNamespace,
		LeaderElectionReleaseOnCancel: true,
	})
	if err != nil {
		setupLog.Error(err, "unable to create the manager")
		os.Exit(1)
	}
	if err := (&controller.SecretReconciler{Client: mgr.GetClient(), Scheme: mgr.GetScheme(),
		Recorder: mgr.GetEventRecorder("secret-operator"), Fixed: fixed}).SetupWithManager(mgr); err != nil {
		setupLog.Error(err, "unable to create the controller", "controller", "secret")
		os.Exit(1)
	}
	if err := (&controller.OrphanReconciler{Client: mgr.GetClient(),
		Recorder: mgr.GetEventRecorder("secret-operator")}).SetupWithManager(mgr); err != nil {
		setupLog.Error(err, "unable to create the controller", "controller", "orphan")
		os.Exit(1)
	}
	setupLog.Info("starting the manager", "fixed", fixed, "leaderElection", leaderElect)
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		setupLog.Error(err, "the manager stopped with an error")
		os.Exit(1)
	}
	fmt.Fprintln(os.Stderr, "manager stopped")
}
