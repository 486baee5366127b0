package controller

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/recorder"
)

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
