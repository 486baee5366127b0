// Package v1 holds the admission webhooks of secrets.example.com/v1 (kubebuilder's internal/webhook/<version>
// layout): a defaulter and a validator of GeneratedSecret, registered with a manager's webhook server. The
// configurations the apiserver calls them by are config/webhook/manifests.yaml, as controller-gen writes them from
// the markers below; an envtest suite installs them (webhook_suite_test.go).
package v1

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	secretsv1 "example.com/race-harness/examples/go/api/v1"
)

// The values the defaulter fills in and the bounds the validator keeps.
const (
	DefaultLength   = 32
	DefaultEncoding = "base64"
	MinLength       = 8
	MaxLength       = 256
)

var generatedsecretlog = logf.Log.WithName("generatedsecret-resource")

// SetupGeneratedSecretWebhookWithManager registers the defaulting and validating webhooks of GeneratedSecret with
// the manager's webhook server, at the paths controller-runtime derives from the kind
// (/mutate-secrets-example-com-v1-generatedsecret, /validate-secrets-example-com-v1-generatedsecret).
func SetupGeneratedSecretWebhookWithManager(mgr ctrl.Manager) error {
	return ctrl.NewWebhookManagedBy(mgr, &secretsv1.GeneratedSecret{}).
		WithDefaulter(&GeneratedSecretCustomDefaulter{}).
		WithValidator(&GeneratedSecretCustomValidator{}).
		Complete()
}

// +kubebuilder:webhook:path=/mutate-secrets-example-com-v1-generatedsecret,mutating=true,failurePolicy=fail,sideEffects=None,groups=secrets.example.com,resources=generatedsecrets,verbs=create;update,versions=v1,name=mgeneratedsecret-v1.kb.io,admissionReviewVersions=v1

// GeneratedSecretCustomDefaulter fills in what a GeneratedSecret left out.
type GeneratedSecretCustomDefaulter struct{}

// Default sets the length and the encoding a GeneratedSecret left out.
func (d *GeneratedSecretCustomDefaulter) Default(_ context.Context, gs *secretsv1.GeneratedSecret) error {
	generatedsecretlog.Info("defaulting", "name", gs.GetName())
	if gs.Spec.Length == 0 {
		gs.Spec.Length = DefaultLength
	}
	if gs.Spec.Encoding == "" {
		gs.Spec.Encoding = DefaultEncoding
	}
	return nil
}

// +kubebuilder:webhook:path=/validate-secrets-example-com-v1-generatedsecret,mutating=false,failurePolicy=fail,sideEffects=None,groups=secrets.example.com,resources=generatedsecrets,verbs=create;update,versions=v1,name=vgeneratedsecret-v1.kb.io,admissionReviewVersions=v1

// GeneratedSecretCustomValidator refuses a GeneratedSecret the operator could not make.
type GeneratedSecretCustomValidator struct{}

// ValidateCreate refuses a length out of bounds or an unknown encoding.
func (v *GeneratedSecretCustomValidator) ValidateCreate(_ context.Context, gs *secretsv1.GeneratedSecret) (admission.Warnings, error) {
	generatedsecretlog.Info("validating create", "name", gs.GetName())
	return nil, validate(gs)
}

// ValidateUpdate refuses what ValidateCreate refuses.
func (v *GeneratedSecretCustomValidator) ValidateUpdate(_ context.Context, _, gs *secretsv1.GeneratedSecret) (admission.Warnings, error) {
	generatedsecretlog.Info("validating update", "name", gs.GetName())
	return nil, validate(gs)
}

// ValidateDelete lets every delete through (the configuration does not ask for deletes).
func (v *GeneratedSecretCustomValidator) ValidateDelete(_ context.Context, _ *secretsv1.GeneratedSecret) (admission.Warnings, error) {
	return nil, nil
}

// validate answers in the two ways controller-runtime turns a validator's error into a denial
// (pkg/webhook/admission/validator_custom.go): an unknown encoding is a plain error, which the webhook denies as
// 403 Forbidden with the error as its message; a length out of bounds is a field error in an Invalid status, which
// the apiserver returns as it is (422, its causes kept).
func validate(gs *secretsv1.GeneratedSecret) error {
	switch gs.Spec.Encoding {
	case "base64", "hex", "":
	default:
		return fmt.Errorf("spec.encoding %q is not one of base64, hex", gs.Spec.Encoding)
	}
	if gs.Spec.Length < MinLength || gs.Spec.Length > MaxLength {
		path := field.NewPath("spec", "length")
		return apierrors.NewInvalid(secretsv1.GroupVersion.WithKind("GeneratedSecret").GroupKind(), gs.Name,
			field.ErrorList{field.Invalid(path, gs.Spec.Length, fmt.Sprintf("must be between %d and %d", MinLength, MaxLength))})
	}
	return nil
}
