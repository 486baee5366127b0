package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// GeneratedSecretSpec is what a GeneratedSecret asks for: how many random bytes, written in which encoding. Both
// are optional in the schema: the defaulting webhook fills them in.
type GeneratedSecretSpec struct {
	// Length is the number of random bytes (8 to 256; 32 when left out).
	// +optional
	Length int32 `json:"length,omitempty"`

	// Encoding is how the bytes are written into the Secret: base64 or hex (base64 when left out).
	// +optional
	Encoding string `json:"encoding,omitempty"`
}

// GeneratedSecretStatus is what was made for a GeneratedSecret.
type GeneratedSecretStatus struct {
	// SecretName is the Secret made for it, once made.
	// +optional
	SecretName string `json:"secretName,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status

// GeneratedSecret asks for a Secret of random bytes.
type GeneratedSecret struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   GeneratedSecretSpec   `json:"spec,omitempty"`
	Status GeneratedSecretStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// GeneratedSecretList is a list of GeneratedSecrets.
type GeneratedSecretList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []GeneratedSecret `json:"items"`
}

func init() {
	SchemeBuilder.Register(&GeneratedSecret{}, &GeneratedSecretList{})
}
