// Command manager is a controller-runtime operator with a race, written as a Go
// developer writes one: flags, ctrl.GetConfigOrDie, ctrl.NewManager, leader
// election on by default, two controllers, an owned child kind and an
// EventRecorder. It uses built-in kinds only.
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
	"context"
	"flag"
	"fmt"
	"os"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/recorder"
)

const (
	// WantLabel marks a ConfigMap that asks for a Secret.
	WantLabel = "app.example/want"
	// OwnerLabel names, on a Secret, the ConfigMap it was made for.
	OwnerLabel = "app.example/owner"
)

var (
	scheme   = runtime.NewScheme()
	setupLog = ctrl.Log.WithName("setup")
)

func init() {
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
}

// SecretReconciler makes one Secret for each ConfigMap that asks for one.
type SecretReconciler struct {
	client.Client
	Scheme   *runtime.Scheme
	Recorder recorder.EventRecorder
	// Fixed selects the deterministic name (see the package comment).
	Fixed bool
}

// Reconcile gives the ConfigMap req names its Secret if it has none.
func (r *SecretReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	var cm corev1.ConfigMap
	if err := r.Get(ctx, req.NamespacedName, &cm); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if cm.Labels[WantLabel] != "secret" || !cm.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	var secrets corev1.SecretList
	if err := r.List(ctx, &secrets, client.InNamespace(cm.Namespace), client.MatchingLabels{OwnerLabel: cm.Name}); err != nil {
		return ctrl.Result{}, err
	}
	if len(secrets.Items) > 0 {
		log.V(1).Info("secret present", "secret", secrets.Items[0].Name)
		return ctrl.Result{}, nil
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: cm.Namespace,
			Labels:    map[string]string{OwnerLabel: cm.Name},
		},
		StringData: map[string]string{"token": "generated-for-" + cm.Name},
	}
	if r.Fixed {
		secret.Name = cm.Name + "-secret"
	} else {
		secret.GenerateName = cm.Name + "-"
	}
	if err := controllerutil.SetControllerReference(&cm, secret, r.Scheme); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.Create(ctx, secret); err != nil {
		if r.Fixed && apierrors.IsAlreadyExists(err) {
			log.Info("secret already exists", "secret", secret.Name)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	log.Info("created secret", "secret", secret.Name)
	r.Recorder.Eventf(&cm, secret, corev1.EventTypeNormal, "SecretCreated", "Create", "created Secret %s", secret.Name)
	return ctrl.Result{}, nil
}

// SetupWithManager registers the controller: ConfigMaps, and the Secrets they own.
func (r *SecretReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("secret").
		For(&corev1.ConfigMap{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			return o.GetLabels()[WantLabel] != ""
		}))).
		Owns(&corev1.Secret{}).
		Complete(r)
}

// OrphanReconciler deletes a Secret whose ConfigMap is gone.
type OrphanReconciler struct {
	client.Client
	Recorder recorder.EventRecorder
}

// Reconcile deletes the Secret req names if the ConfigMap its label names does not exist.
func (r *OrphanReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	var secret corev1.Secret
	if err := r.Get(ctx, req.NamespacedName, &secret); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	owner := secret.Labels[OwnerLabel]
	if owner == "" || !secret.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	var cm corev1.ConfigMap
	err := r.Get(ctx, client.ObjectKey{Namespace: secret.Namespace, Name: owner}, &cm)
	if err == nil || !apierrors.IsNotFound(err) {
		return ctrl.Result{}, err
	}
	// The UID precondition: a Secret of the same name made anew since this read is not ours to delete.
	if err := r.Delete(ctx, &secret, client.Preconditions{UID: &secret.UID}); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	log.Info("deleted orphaned secret", "configmap", owner)
	r.Recorder.Eventf(&secret, nil, corev1.EventTypeNormal, "OrphanDeleted", "Delete", "ConfigMap %s is gone", owner)
	return ctrl.Result{}, nil
}

// SetupWithManager registers the controller: Secrets that name a ConfigMap.
func (r *OrphanReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("orphan").
		For(&corev1.Secret{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			return o.GetLabels()[OwnerLabel] != ""
		}))).
		Complete(r)
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
	if err := (&SecretReconciler{Client: mgr.GetClient(), Scheme: mgr.GetScheme(),
		Recorder: mgr.GetEventRecorder("secret-operator"), Fixed: fixed}).SetupWithManager(mgr); err != nil {
		setupLog.Error(err, "unable to create the controller", "controller", "secret")
		os.Exit(1)
	}
	if err := (&OrphanReconciler{Client: mgr.GetClient(),
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
