// Package v1 contains the API of the secrets.example.com group, version v1: GeneratedSecret, a request for a
// Secret of random bytes, the kind whose admission webhooks internal/webhook/v1 serves.
// +kubebuilder:object:generate=true
// +groupName=secrets.example.com
package v1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of the objects of this package.
	GroupVersion = schema.GroupVersion{Group: "secrets.example.com", Version: "v1"}

	// SchemeBuilder adds the Go types of this group and version to a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the types of this group and version to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
