package v1

import (
	"errors"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	secretsv1 "example.com/race-harness/examples/go/api/v1"
)

var _ = Describe("GeneratedSecret webhooks", func() {
	const namespace = "default"

	// fresh is a GeneratedSecret of that name, none of which is stored: a cluster the suite ran against before keeps
	// the objects of that run (the suite leaves them, to be read afterwards).
	fresh := func(name string, spec secretsv1.GeneratedSecretSpec) *secretsv1.GeneratedSecret {
		gs := &secretsv1.GeneratedSecret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}, Spec: spec}
		Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, gs.DeepCopy()))).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKeyFromObject(gs), &secretsv1.GeneratedSecret{}))
		}).Should(BeTrue())
		return gs
	}

	stored := func(gs *secretsv1.GeneratedSecret) (*secretsv1.GeneratedSecret, error) {
		got := &secretsv1.GeneratedSecret{}
		return got, k8sClient.Get(ctx, client.ObjectKeyFromObject(gs), got)
	}

	code := func(err error) int32 {
		var status apierrors.APIStatus
		Expect(errors.As(err, &status)).To(BeTrue(), "not an API status: %v", err)
		return status.Status().Code
	}

	Context("when a GeneratedSecret is created", func() {
		It("fills in the length and the encoding it left out", func() {
			gs := fresh("defaulted", secretsv1.GeneratedSecretSpec{})
			Expect(k8sClient.Create(ctx, gs)).To(Succeed())
			want := secretsv1.GeneratedSecretSpec{Length: DefaultLength, Encoding: DefaultEncoding}
			Expect(gs.Spec).To(Equal(want), "the created object the apiserver answered with")
			got, err := stored(gs)
			Expect(err).NotTo(HaveOccurred())
			Expect(got.Spec).To(Equal(want), "the stored object")
		})

		It("denies a length out of bounds with the validator's field error", func() {
			gs := fresh("too-short", secretsv1.GeneratedSecretSpec{Length: 4})
			err := k8sClient.Create(ctx, gs)
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
			Expect(code(err)).To(Equal(int32(422)))
			Expect(err.Error()).To(Equal(`admission webhook "vgeneratedsecret-v1.kb.io" denied the request: ` +
				`GeneratedSecret.secrets.example.com "too-short" is invalid: spec.length: Invalid value: 4: ` +
				`must be between 8 and 256`))
			_, err = stored(gs)
			Expect(apierrors.IsNotFound(err)).To(BeTrue(), "got %v", err)
		})

		It("denies an unknown encoding as Forbidden with the validator's message", func() {
			gs := fresh("rot13", secretsv1.GeneratedSecretSpec{Length: 16, Encoding: "rot13"})
			err := k8sClient.Create(ctx, gs)
			Expect(apierrors.IsForbidden(err)).To(BeTrue(), "got %v", err)
			Expect(code(err)).To(Equal(int32(403)))
			Expect(err.Error()).To(Equal(`admission webhook "vgeneratedsecret-v1.kb.io" denied the request: ` +
				`spec.encoding "rot13" is not one of base64, hex`))
			_, err = stored(gs)
			Expect(apierrors.IsNotFound(err)).To(BeTrue(), "got %v", err)
		})

		It("answers a dry run defaulted and stores nothing", func() {
			gs := fresh("dry-run", secretsv1.GeneratedSecretSpec{Encoding: "hex"})
			Expect(k8sClient.Create(ctx, gs, client.DryRunAll)).To(Succeed())
			Expect(gs.Spec).To(Equal(secretsv1.GeneratedSecretSpec{Length: DefaultLength, Encoding: "hex"}))
			_, err := stored(gs)
			Expect(apierrors.IsNotFound(err)).To(BeTrue(), "got %v", err)
		})
	})

	Context("when a GeneratedSecret is updated", func() {
		It("denies a length out of bounds and keeps the stored object", func() {
			gs := fresh("resized", secretsv1.GeneratedSecretSpec{Length: 16})
			Expect(k8sClient.Create(ctx, gs)).To(Succeed())
			patch := client.MergeFrom(gs.DeepCopy())
			gs.Spec.Length = 1000
			err := k8sClient.Patch(ctx, gs, patch)
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
			Expect(err.Error()).To(ContainSubstring(`admission webhook "vgeneratedsecret-v1.kb.io" denied the request: ` +
				`GeneratedSecret.secrets.example.com "resized" is invalid: spec.length: Invalid value: 1000:`))
			got, err := stored(gs)
			Expect(err).NotTo(HaveOccurred())
			Expect(got.Spec).To(Equal(secretsv1.GeneratedSecretSpec{Length: 16, Encoding: DefaultEncoding}))
		})
	})
})
