package controller

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

var _ = Describe("Secret controller", func() {
	const (
		namespace = "default"
		timeout   = 10 * time.Second
		interval  = 10 * time.Millisecond
	)

	// ownedSecrets lists, from the apiserver (k8sClient reads no cache), the Secrets made for the ConfigMap name.
	ownedSecrets := func(name string) func(g Gomega) []corev1.Secret {
		return func(g Gomega) []corev1.Secret {
			var secrets corev1.SecretList
			g.Expect(k8sClient.List(ctx, &secrets, client.InNamespace(namespace),
				client.MatchingLabels{OwnerLabel: name})).To(Succeed())
			return secrets.Items
		}
	}

	createConfigMap := func(name string) *corev1.ConfigMap {
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: map[string]string{WantLabel: "secret"}},
			Data:       map[string]string{"v": "1"},
		}
		Expect(k8sClient.Create(ctx, cm)).To(Succeed())
		DeferCleanup(func() {
			Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, cm))).To(Succeed())
		})
		return cm
	}

	Context("when a ConfigMap asks for a Secret", func() {
		It("makes one Secret owned by the ConfigMap", func() {
			createConfigMap("owned")
			Eventually(ownedSecrets("owned"), timeout, interval).Should(HaveLen(1))
			secret := ownedSecrets("owned")(Default)[0]
			owner := metav1.GetControllerOf(&secret)
			Expect(owner).NotTo(BeNil())
			Expect(owner.Kind).To(Equal("ConfigMap"))
			Expect(owner.Name).To(Equal("owned"))
		})

		It("keeps one Secret per ConfigMap through an update", func() {
			cm := createConfigMap("app")
			Eventually(ownedSecrets("app"), timeout, interval).Should(HaveLen(1))

			By("updating the ConfigMap")
			patch := client.MergeFrom(cm.DeepCopy())
			cm.Data["v"] = "2"
			Expect(k8sClient.Patch(ctx, cm, patch)).To(Succeed())

			Consistently(ownedSecrets("app"), time.Second, interval).Should(HaveLen(1))
		})
	})
})
