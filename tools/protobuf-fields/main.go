// Command protobuf-fields writes the field table race-harness reads protobuf request bodies with
// (harness/kube/_http/protobuf_fields.json).
//
// Go clients send built-in kinds as application/vnd.kubernetes.protobuf: client-go's typed clients
// (gentype PrefersProtobuf) and controller-runtime's client for the types of client-go's scheme
// (pkg/client/apiutil). The served API reads those bodies into the JSON document the same Go object
// marshals to, which needs, for every message reachable from those kinds, each field's number and wire
// form (the `protobuf:"..."` struct tag go-to-protobuf generated k8s.io/api's generated.proto from) and
// its JSON name and zero-value rule (the `json:"..."` tag, and whether the Go type is a pointer).
//
// The table is read off the Go types with reflect, so it is exactly the k8s.io/api and
// k8s.io/apimachinery versions of go.mod. Run it from this directory:
//
//	go run . > ../../harness/kube/_http/protobuf_fields.json
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// kinds are the objects a Go client sends that the served API stores or answers: every built-in it
// serves except CustomResourceDefinition (not in client-go's scheme, so sent as JSON), the scale
// subresource's Scale, the self-subject reviews, and the DeleteOptions a typed Delete sends as its body.
var kinds = []runtime.Object{
	&corev1.Pod{}, &corev1.Service{}, &corev1.ConfigMap{}, &corev1.Secret{}, &corev1.Node{},
	&corev1.Namespace{}, &corev1.Event{}, &corev1.Endpoints{}, &corev1.PersistentVolume{},
	&corev1.PersistentVolumeClaim{}, &corev1.ServiceAccount{}, &corev1.ResourceQuota{},
	&appsv1.Deployment{}, &appsv1.ReplicaSet{}, &appsv1.StatefulSet{}, &appsv1.DaemonSet{},
	&appsv1.ControllerRevision{},
	&batchv1.Job{}, &batchv1.CronJob{},
	&coordinationv1.Lease{},
	&eventsv1.Event{},
	&schedulingv1.PriorityClass{},
	&policyv1.PodDisruptionBudget{},
	&rbacv1.Role{}, &rbacv1.RoleBinding{}, &rbacv1.ClusterRole{}, &rbacv1.ClusterRoleBinding{},
	&authorizationv1.SelfSubjectAccessReview{}, &authorizationv1.SelfSubjectRulesReview{},
	&autoscalingv1.Scale{},
	&admissionregistrationv1.MutatingWebhookConfiguration{}, &admissionregistrationv1.ValidatingWebhookConfiguration{},
	&metav1.DeleteOptions{},
}

// groupVersions name each package's apiVersion, as the envelope's typeMeta carries it.
var groupVersions = map[string]string{
	"k8s.io/api/admissionregistration/v1": "admissionregistration.k8s.io/v1",
	"k8s.io/api/core/v1":                  "v1",
	"k8s.io/api/apps/v1":                  "apps/v1",
	"k8s.io/api/batch/v1":                 "batch/v1",
	"k8s.io/api/coordination/v1":          "coordination.k8s.io/v1",
	"k8s.io/api/events/v1":                "events.k8s.io/v1",
	"k8s.io/api/scheduling/v1":            "scheduling.k8s.io/v1",
	"k8s.io/api/policy/v1":                "policy/v1",
	"k8s.io/api/rbac/v1":                  "rbac.authorization.k8s.io/v1",
	"k8s.io/api/authorization/v1":         "authorization.k8s.io/v1",
	"k8s.io/api/autoscaling/v1":           "autoscaling/v1",
	// DeleteOptions goes in any group-version's envelope (every group registers it): the reader takes
	// it by kind alone
	"k8s.io/apimachinery/pkg/apis/meta/v1": "*",
}

// special are the types whose protobuf message and JSON form are both written by hand upstream
// (time_proto.go, micro_time_proto.go, quantity_proto.go, intstr.go, runtime's types_proto.go,
// fields_proto.go): the reader decodes each with its own rule, named here. Any other type with a JSON
// form of its own (metav1.Duration, were a kind to reach it) stops the program.
var special = map[reflect.Type]string{
	reflect.TypeFor[metav1.Time]():          "time",
	reflect.TypeFor[metav1.MicroTime]():     "microtime",
	reflect.TypeFor[resource.Quantity]():    "quantity",
	reflect.TypeFor[intstr.IntOrString]():   "intorstring",
	reflect.TypeFor[runtime.RawExtension](): "rawjson",
	reflect.TypeFor[metav1.FieldsV1]():      "rawjson",
}

// field is one protobuf field of a message: [number, JSON name, type, flags].
// type is string, bytes, bool, int, a special's name, or the name of another message;
// flags are words: repeated, map (string keys, values of type), inline (the message's fields are the
// parent's in JSON), keep (JSON keeps the zero value: a pointer, or no omitempty).
type field struct {
	number int
	json   string
	typ    string
	flags  []string
}

type table struct {
	messages map[string][]field
	walking  map[string]bool
}

// name is the table's key of a message type: its package path after k8s.io/api/ or
// k8s.io/apimachinery/pkg/apis/, then the type's name.
func name(t reflect.Type) string {
	pkg := strings.TrimPrefix(strings.TrimPrefix(t.PkgPath(), "k8s.io/api/"), "k8s.io/apimachinery/pkg/apis/")
	return pkg + "." + t.Name()
}

var jsonMarshaler = reflect.TypeFor[json.Marshaler]()

// message walks a struct type and every message reachable from it, returning its table key.
func (tb *table) message(t reflect.Type) string {
	key := name(t)
	if _, done := tb.messages[key]; done || tb.walking[key] {
		return key
	}
	if t.Implements(jsonMarshaler) || reflect.PointerTo(t).Implements(jsonMarshaler) {
		fail("%s has its own JSON form but no rule of its own here: add it to special", t)
	}
	tb.walking[key] = true
	var fields []field
	for i := range t.NumField() {
		f := t.Field(i)
		tag, ok := f.Tag.Lookup("protobuf")
		if !ok || tag == "-" {
			continue // TypeMeta (the envelope carries it) and fields that never go over protobuf
		}
		fields = append(fields, tb.field(t, f, tag))
	}
	sort.Slice(fields, func(i, j int) bool { return fields[i].number < fields[j].number })
	for i := 1; i < len(fields); i++ {
		if fields[i].number == fields[i-1].number {
			fail("%s has two fields numbered %d", t, fields[i].number)
		}
	}
	tb.messages[key] = fields
	delete(tb.walking, key)
	return key
}

func (tb *table) field(parent reflect.Type, f reflect.StructField, tag string) field {
	parts := strings.Split(tag, ",")
	number, err := strconv.Atoi(parts[1])
	if err != nil || len(parts) < 3 {
		fail("%s.%s has a protobuf tag %q this program does not read", parent, f.Name, tag)
	}
	// Only the number is taken from the tag: the wire type and repetition follow the Go type, as
	// go-to-protobuf derived generated.proto from it, and the tag's words are not always right
	// (SecretVolumeSource.DefaultMode is tagged bytes where generated.proto has "optional int32
	// defaultMode = 3"; ISCSIVolumeSource.Portals is tagged opt where it has "repeated string portals = 7").
	jsonTag := strings.Split(f.Tag.Get("json"), ",")
	out := field{number: number, json: jsonTag[0]}
	omitempty, omitzero := false, false
	for _, opt := range jsonTag[1:] {
		switch opt {
		case "omitempty":
			omitempty = true
		case "omitzero":
			omitzero = true
		}
	}
	if out.json == "" {
		// encoding/json promotes the fields of an embedded struct with no JSON name (Probe's ProbeHandler,
		// Volume's VolumeSource): in protobuf it is one message field, in JSON its fields are the parent's
		if !f.Anonymous || f.Type.Kind() != reflect.Struct {
			fail("%s.%s has no JSON name", parent, f.Name)
		}
		out.flags = append(out.flags, "inline")
	}
	t := f.Type
	keep := !omitempty
	switch {
	case t.Kind() == reflect.Pointer:
		t, keep = t.Elem(), true
	case t.Kind() == reflect.Map:
		if t.Key().Kind() != reflect.String {
			fail("%s.%s is a map with %s keys", parent, f.Name, t.Key())
		}
		out.flags = append(out.flags, "map")
		t = t.Elem()
	case t.Kind() == reflect.Slice && t.Elem().Kind() != reflect.Uint8:
		out.flags = append(out.flags, "repeated")
		t = t.Elem()
	}
	out.typ = tb.valueType(parent, f, t)
	if omitzero {
		// the zero metav1.Time is JSON null, which the reader drops unless told to keep it: omitzero
		// (ObjectMeta.CreationTimestamp, since apimachinery 0.35) is that, for a time
		if out.typ != "time" && out.typ != "microtime" {
			fail("%s.%s is omitzero, which the reader implements only for a time", parent, f.Name)
		}
		keep = false
	}
	if keep && len(out.flags) == 0 { // a list, a map or an inline message has no zero value on the wire
		out.flags = append(out.flags, "keep")
	}
	return out
}

func (tb *table) valueType(parent reflect.Type, f reflect.StructField, t reflect.Type) string {
	if s, ok := special[t]; ok {
		return s
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "bool"
	case reflect.Int32, reflect.Int64, reflect.Int:
		return "int"
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return "bytes"
		}
	case reflect.Struct:
		return tb.message(t)
	}
	fail("%s.%s is a %s, which this program has no rule for", parent, f.Name, t)
	return ""
}

func contains(words []string, word string) bool {
	for _, w := range words {
		if w == word {
			return true
		}
	}
	return false
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "protobuf-fields: "+format+"\n", args...)
	os.Exit(1)
}

// main writes the table as JSON, one message a line (so a version bump reads as a diff of messages).
func main() {
	tb := &table{messages: map[string][]field{}, walking: map[string]bool{}}
	kindKeys := map[string]string{}
	for _, obj := range kinds {
		t := reflect.TypeOf(obj).Elem()
		gv, ok := groupVersions[t.PkgPath()]
		if !ok {
			fail("%s: no apiVersion for package %s", t, t.PkgPath())
		}
		kindKeys[gv+" "+t.Name()] = tb.message(t)
	}
	w := bufio.NewWriter(os.Stdout)
	fmt.Fprintln(w, "{")
	fmt.Fprintf(w, "%q: %s,\n", "source", mustJSON(fmt.Sprintf("the struct tags of k8s.io/api %s and "+
		"k8s.io/apimachinery %s, read by tools/protobuf-fields", version("k8s.io/api"), version("k8s.io/apimachinery"))))
	fmt.Fprintf(w, "%q: {\n", "kinds")
	writeSorted(w, kindKeys, func(v string) string { return mustJSON(v) })
	fmt.Fprintln(w, "},")
	fmt.Fprintf(w, "%q: {\n", "messages")
	writeSorted(w, tb.messages, func(fields []field) string {
		rows := make([]string, len(fields))
		for i, f := range fields {
			rows[i] = fmt.Sprintf("[%d,%s,%s,%s]", f.number, mustJSON(f.json), mustJSON(f.typ),
				mustJSON(strings.Join(f.flags, " ")))
		}
		return "[" + strings.Join(rows, ",") + "]"
	})
	fmt.Fprintln(w, "}")
	fmt.Fprintln(w, "}")
	if err := w.Flush(); err != nil {
		fail("%v", err)
	}
}

func writeSorted[V any](w *bufio.Writer, m map[string]V, value func(V) string) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for i, k := range keys {
		sep := ","
		if i == len(keys)-1 {
			sep = ""
		}
		fmt.Fprintf(w, "%s: %s%s\n", mustJSON(k), value(m[k]), sep)
	}
}

// version is the version of a module this program was built with (go.mod's, by way of go.sum).
func version(module string) string {
	info, ok := debug.ReadBuildInfo()
	if ok {
		for _, dep := range info.Deps {
			if dep.Path == module {
				return dep.Version
			}
		}
	}
	fail("no build information for %s", module)
	return ""
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		fail("%v", err)
	}
	return string(b)
}
