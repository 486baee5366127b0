// Package controller holds the example operator's reconcilers, as kubebuilder lays them out: each with its
// SetupWithManager, so that the manager (main.go) and the envtest suite (suite_test.go) register them alike.
//
// The secret controller gives every ConfigMap labelled app.example/want=secret
// one Secret (labelled app.example/owner=<ConfigMap name>, owned by it). The
// orphan controller deletes such a Secret once its ConfigMap is gone.
//
// The bug (Fixed false, the manager's --buggy): the secret controller reads the
// Secrets from the manager's cache and, finding none, creates one with a
// generated name. The cache lags the controller's own write: the Secret's ADDED
// event arrives on the Secret informer's watch, which nothing orders against the
// ConfigMap informer's, so a reconcile triggered by an edit of the ConfigMap
// before that delivery sees no Secret and creates a second one.
//
// The fix (Fixed true, --fixed): a deterministic name and AlreadyExists read as
// done (kube-controller-manager's pkg/controller/deployment/sync.go,
// getNewReplicaSet): two reconciles that both miss the cache ask for the same
// object, and the apiserver keeps one.
package controller

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/recorder"
)

const (
	// WantLabel marks a ConfigMap that asks for a Secret.
	WantLabel = "app.example/want"
	// OwnerLabel names, on a Secret, the ConfigMap it was made for.
	OwnerLabel = "app.example/owner"
)

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
