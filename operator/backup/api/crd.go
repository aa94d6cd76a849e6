package api

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// CRDs are the backup, restore, schedule and restore grant CRDs of a
// watched kind, as the scaffold writes them to config/crd and the bundle
// ships them.
func CRDs(watched schema.GroupVersionKind) []*apiextensionsv1.CustomResourceDefinition {
	return []*apiextensionsv1.CustomResourceDefinition{
		crd(BackupKind(watched), backupSpecSchema(), backupStatusSchema(), []apiextensionsv1.CustomResourceColumnDefinition{
			{Name: "Source", Type: "string", JSONPath: ".spec.source"},
			{Name: "Phase", Type: "string", JSONPath: ".status.phase"},
			{Name: "Reason", Type: "string", JSONPath: ".status.reason"},
			{Name: "Size", Type: "integer", JSONPath: ".status.size"},
			{Name: "Duration", Type: "string", JSONPath: ".status.duration"},
			{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp"},
		}),
		crd(RestoreKind(watched), restoreSpecSchema(watched), restoreStatusSchema(), []apiextensionsv1.CustomResourceColumnDefinition{
			{Name: "Backup", Type: "string", JSONPath: ".spec.backupName"},
			{Name: "Restored", Type: "string", JSONPath: ".status.restored"},
			{Name: "Phase", Type: "string", JSONPath: ".status.phase"},
			{Name: "Reason", Type: "string", JSONPath: ".status.reason"},
			{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp"},
		}),
		crd(ScheduleKind(watched), scheduleSpecSchema(), scheduleStatusSchema(), []apiextensionsv1.CustomResourceColumnDefinition{
			{Name: "Schedule", Type: "string", JSONPath: ".spec.schedule"},
			{Name: "Source", Type: "string", JSONPath: ".spec.template.source"},
			{Name: "Last", Type: "string", JSONPath: ".status.lastBackup"},
			{Name: "Next", Type: "date", JSONPath: ".status.nextScheduleTime"},
			{Name: "Reason", Type: "string", JSONPath: ".status.reason"},
			{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp"},
		}),
		grantCRD(watched),
	}
}

// grantCRD is the restore grant's CRD: a spec only, since nothing reports
// on a grant.
func grantCRD(watched schema.GroupVersionKind) *apiextensionsv1.CustomResourceDefinition {
	c := crd(RestoreGrantKind(watched), restoreGrantSpecSchema(watched), apiextensionsv1.JSONSchemaProps{}, []apiextensionsv1.CustomResourceColumnDefinition{
		{Name: "From", Type: "string", JSONPath: ".spec.from[*].namespace"},
		{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp"},
	})
	v := &c.Spec.Versions[0]
	v.Subresources = nil
	delete(v.Schema.OpenAPIV3Schema.Properties, "status")
	return c
}

func crd(gvk schema.GroupVersionKind, spec, status apiextensionsv1.JSONSchemaProps, columns []apiextensionsv1.CustomResourceColumnDefinition) *apiextensionsv1.CustomResourceDefinition {
	plural := Plural(gvk.Kind)
	return &apiextensionsv1.CustomResourceDefinition{
		TypeMeta:   metav1.TypeMeta{APIVersion: apiextensionsv1.SchemeGroupVersion.String(), Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + gvk.Group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: gvk.Group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{
				Kind: gvk.Kind, ListKind: gvk.Kind + "List", Plural: plural, Singular: plural[:len(plural)-1],
			},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: gvk.Version, Served: true, Storage: true,
				Subresources:             &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
				AdditionalPrinterColumns: columns,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type:        "object",
					Description: gvk.Kind + " of the operator's " + gvk.Group + " API.",
					Required:    []string{"spec"},
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"apiVersion": {Type: "string"},
						"kind":       {Type: "string"},
						"metadata":   {Type: "object"},
						"spec":       spec,
						"status":     status,
					},
				}},
			}},
		},
	}
}

func str(desc string) apiextensionsv1.JSONSchemaProps {
	return apiextensionsv1.JSONSchemaProps{Type: "string", Description: desc}
}

func name(desc string) apiextensionsv1.JSONSchemaProps {
	p := str(desc)
	p.MinLength = ptrInt(1)
	p.MaxLength = ptrInt(253)
	return p
}

func boolean(desc string) apiextensionsv1.JSONSchemaProps {
	return apiextensionsv1.JSONSchemaProps{Type: "boolean", Description: desc}
}

func integer(desc string) apiextensionsv1.JSONSchemaProps {
	return apiextensionsv1.JSONSchemaProps{Type: "integer", Format: "int64", Description: desc}
}

func duration(desc string) apiextensionsv1.JSONSchemaProps {
	p := str(desc)
	p.Pattern = `^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	return p
}

func ptrInt(n int64) *int64 { return &n }

func obj(desc string, required []string, props map[string]apiextensionsv1.JSONSchemaProps) apiextensionsv1.JSONSchemaProps {
	return apiextensionsv1.JSONSchemaProps{Type: "object", Description: desc, Required: required, Properties: props}
}

func backupSpecSchema() apiextensionsv1.JSONSchemaProps {
	target := obj("Where the volumes' data go: one of pvc or s3.", nil, map[string]apiextensionsv1.JSONSchemaProps{
		"pvc": obj("A PersistentVolumeClaim of the backup's namespace.", []string{"claimName"}, map[string]apiextensionsv1.JSONSchemaProps{
			"claimName": name("Name of the claim."),
			"path":      str("Folder inside the claim; default its root."),
		}),
		"s3": obj("A bucket of an S3-compatible object store.", []string{"endpoint", "bucket", "credentialsSecret"}, map[string]apiextensionsv1.JSONSchemaProps{
			"endpoint":          name("host:port of the store."),
			"bucket":            name("Bucket name."),
			"prefix":            str("Key prefix."),
			"region":            str("Region of the bucket."),
			"insecure":          boolean("Plain HTTP instead of HTTPS."),
			"credentialsSecret": name("Secret of the backup's namespace with accessKeyID and secretAccessKey."),
		}),
	})
	one := int64(1)
	target.MinProperties, target.MaxProperties = &one, &one
	return obj("What to back up and where.", []string{"source", "target"}, map[string]apiextensionsv1.JSONSchemaProps{
		"source":                  name("Name of the custom resource to back up, in this namespace."),
		"target":                  target,
		"skipSecrets":             boolean("Leave out the Secrets the release renders."),
		"skipConfigMaps":          boolean("Leave out the ConfigMaps the release renders."),
		"hookTimeout":             duration("Bound of each backup hook that sets none (default 30s)."),
		"waitTimeout":             duration("How long to wait for a release mid-install or mid-upgrade before failing (default 5m)."),
		"volumeMethod":            volumeMethod(),
		"volumeSnapshotClassName": str("VolumeSnapshotClass of the snapshots; default: the default class of each claim's CSI driver."),
	})
}

func volumesSchema() apiextensionsv1.JSONSchemaProps {
	return apiextensionsv1.JSONSchemaProps{Type: "array", Description: "One result per PersistentVolumeClaim.", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{
		Type: "object", Required: []string{"claimName"}, Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"claimName": str("The claim."),
			"phase":     str("Where its copy is."),
			"size":      integer("Bytes of its archive, or the restore size of its snapshot."),
			"files":     integer("Files in its archive."),
			"method":    str("How its data were kept: snapshot or copy."),
			"snapshot":  str("Its VolumeSnapshot (method snapshot)."),
			"duration":  str("How long its snapshot or copy took."),
			"message":   str("Why it failed."),
		},
	}}}
}

func volumeMethod() apiextensionsv1.JSONSchemaProps {
	p := str("How the claims' data are kept: auto (a CSI VolumeSnapshot where the claim's driver has a VolumeSnapshotClass, else a copy to the target; the default), snapshot (fail without a class) or copy.")
	for _, v := range []VolumeMethod{VolumeMethodAuto, VolumeMethodSnapshot, VolumeMethodCopy} {
		p.Enum = append(p.Enum, apiextensionsv1.JSON{Raw: []byte(`"` + v + `"`)})
	}
	return p
}

func phase() apiextensionsv1.JSONSchemaProps {
	p := str("Pending, Running, Completed or Failed.")
	for _, v := range []Phase{PhasePending, PhaseRunning, PhaseCompleted, PhaseFailed} {
		p.Enum = append(p.Enum, apiextensionsv1.JSON{Raw: []byte(`"` + v + `"`)})
	}
	return p
}

func timestamp(desc string) apiextensionsv1.JSONSchemaProps {
	return apiextensionsv1.JSONSchemaProps{Type: "string", Format: "date-time", Description: desc}
}

func backupStatusSchema() apiextensionsv1.JSONSchemaProps {
	return obj("What the operator reports of the backup.", nil, map[string]apiextensionsv1.JSONSchemaProps{
		"phase":          phase(),
		"reason":         str("Why, in one CamelCase word."),
		"message":        str("Why, for people."),
		"chart":          str("The backed-up release's chart, name-version."),
		"revision":       {Type: "integer", Description: "The backed-up release's revision."},
		"startTime":      timestamp("When the copy began."),
		"completionTime": timestamp("When the backup ended."),
		"size":           integer("Bytes written to the target."),
		"duration":       str("How long the backup took."),
		"objects":        {Type: "integer", Description: "Objects held besides the volumes' data."},
		"volumes":        volumesSchema(),
		"contentsDigest": str("sha256 of the contents Secret's data as the operator wrote it; a restore refuses contents that differ."),
	})
}

func restoreSpecSchema(watched schema.GroupVersionKind) apiextensionsv1.JSONSchemaProps {
	return obj("What to restore and where.", []string{"backupName"}, map[string]apiextensionsv1.JSONSchemaProps{
		"backupName":      name("A Completed backup of this namespace."),
		"targetNamespace": str("Namespace to restore into; default this one. Another namespace must let this one in with a " + RestoreGrantKind(watched).Kind + " there."),
		"targetName":      str("Name of the restored custom resource; default the backed-up one's."),
		"overwrite":       boolean("Replace an existing custom resource, claim, Secret or ConfigMap of the same name."),
	})
}

func restoreStatusSchema() apiextensionsv1.JSONSchemaProps {
	return obj("What the operator reports of the restore.", nil, map[string]apiextensionsv1.JSONSchemaProps{
		"phase":          phase(),
		"reason":         str("Why, in one CamelCase word."),
		"message":        str("Why, for people."),
		"startTime":      timestamp("When the restore began."),
		"completionTime": timestamp("When the restore ended."),
		"duration":       str("How long the restore took."),
		"restored":       str("The custom resource created, namespace/name."),
		"volumes":        volumesSchema(),
	})
}

func restoreGrantSpecSchema(watched schema.GroupVersionKind) apiextensionsv1.JSONSchemaProps {
	ns := name("A namespace whose " + RestoreKind(watched).Kind + "s may restore into this one.")
	ns.MaxLength = ptrInt(63)
	from := apiextensionsv1.JSONSchemaProps{Type: "array", Description: "The namespaces let in, each named (no wildcard).", MinItems: ptrInt(1),
		Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{
			Type: "object", Required: []string{"namespace"}, Properties: map[string]apiextensionsv1.JSONSchemaProps{"namespace": ns},
		}}}
	return obj("Which namespaces' "+RestoreKind(watched).Kind+"s may restore into this namespace.", []string{"from"}, map[string]apiextensionsv1.JSONSchemaProps{
		"from": from,
	})
}

func scheduleSpecSchema() apiextensionsv1.JSONSchemaProps {
	count := func(desc string) apiextensionsv1.JSONSchemaProps {
		p := apiextensionsv1.JSONSchemaProps{Type: "integer", Format: "int32", Description: desc}
		p.Minimum = new(float64)
		return p
	}
	return obj("When to back up, what, and how many backups to keep.", []string{"schedule", "template"}, map[string]apiextensionsv1.JSONSchemaProps{
		"schedule":         name("Cron expression (minute hour day-of-month month day-of-week), or @daily, @hourly, @every 1h; CRON_TZ=<zone> first for a time zone, UTC otherwise."),
		"template":         backupSpecSchema(),
		"keep":             count("Completed backups kept; older ones are deleted with their archives (default 3)."),
		"keepFailed":       count("Failed backups kept (default 1)."),
		"startingDeadline": duration("How late a run may start (after an operator outage, or behind a running backup of the same resource); a later one is skipped. Default: the latest missed run starts, once."),
		"suspend":          boolean("Stop new runs; retention goes on."),
	})
}

func scheduleStatusSchema() apiextensionsv1.JSONSchemaProps {
	return obj("What the operator reports of the schedule.", nil, map[string]apiextensionsv1.JSONSchemaProps{
		"reason":           str("Why, in one CamelCase word."),
		"message":          str("Why, for people."),
		"lastScheduleTime": timestamp("The cron tick last run or skipped."),
		"nextScheduleTime": timestamp("The next cron tick."),
		"lastBackup":       str("The backup created last."),
		"lastCompleted":    str("The newest of its backups that completed."),
		"kept":             {Type: "integer", Description: "Its backups that exist now."},
	})
}
