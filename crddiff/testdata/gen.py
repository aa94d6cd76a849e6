# Writes the CRD pairs of crddiff's tests: one directory per case with
# old.yaml and new.yaml. Run from this directory: python3 gen.py
# The chart-* cases are not written here: scaffold's TestChartPairsForOLMv1
# writes them (go test ./scaffold -run TestChartPairsForOLMv1 -update).
import copy, os, yaml

def crd(versions, scope="Namespaced"):
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "names": {"kind": "Widget", "listKind": "WidgetList", "plural": "widgets", "singular": "widget"},
            "scope": scope,
            "versions": versions,
        },
    }

def version(name, spec, storage=True, served=True):
    return {
        "name": name, "served": served, "storage": storage,
        "subresources": {"status": {}},
        "schema": {"openAPIV3Schema": {"type": "object", "properties": {
            "spec": spec,
            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        }}},
    }

BASE = {
    "type": "object",
    "properties": {
        "replicaCount": {"type": "integer", "default": 1, "minimum": 0, "maximum": 10},
        "color": {"type": "string", "enum": ["red", "green", "blue"]},
        "name": {"type": "string", "minLength": 1, "maxLength": 20, "description": "The widget's name."},
        "tags": {"type": "array", "items": {"type": "string"}},
        "image": {"type": "object", "properties": {
            "repository": {"type": "string"},
            "tag": {"type": "string", "pattern": "^v[0-9]+$"},
        }},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
    },
}

def edit(f):
    s = copy.deepcopy(BASE)
    f(s)
    return s

P = lambda s: s["properties"]
cases = {
    # unsafe, one per rule
    "field-removed": lambda s: P(s).pop("name"),
    "nested-field-removed": lambda s: P(P(s)["image"]).pop("tag"),
    "enum-narrowed": lambda s: P(s)["color"].update(enum=["red", "green"]),
    "enum-added": lambda s: P(P(s)["image"])["repository"].update(enum=["nginx"]),
    "type-changed": lambda s: P(s)["replicaCount"].update(type="string", default="1", minimum=None, maximum=None) or [P(s)["replicaCount"].pop(k) for k in ("minimum", "maximum")],
    "required-added": lambda s: s.update(required=["name"]),
    "default-changed": lambda s: P(s)["replicaCount"].update(default=2),
    "default-added": lambda s: P(s)["color"].update(default="red"),
    "default-removed": lambda s: P(s)["replicaCount"].pop("default"),
    "maximum-lowered": lambda s: P(s)["replicaCount"].update(maximum=5),
    "minimum-raised": lambda s: P(s)["replicaCount"].update(minimum=1),
    "maxlength-lowered": lambda s: P(s)["name"].update(maxLength=10),
    "minlength-raised": lambda s: P(s)["name"].update(minLength=3),
    "maxitems-added": lambda s: P(s)["tags"].update(maxItems=3),
    "minitems-added": lambda s: P(s)["tags"].update(minItems=1),
    "maxproperties-added": lambda s: P(s)["labels"].update(maxProperties=5),
    "pattern-changed": lambda s: P(P(s)["image"])["tag"].update(pattern="^v[0-9]+\\.[0-9]+$"),
    "nullable-added": lambda s: P(s)["name"].update(nullable=True),
    "map-value-type-changed": lambda s: P(s)["labels"].update(additionalProperties={"type": "integer"}),
    "list-item-type-changed": lambda s: P(s)["tags"].update(items={"type": "integer"}),
    # safe
    "optional-field-added": lambda s: P(s).update(size={"type": "string"}),
    "enum-widened": lambda s: P(s)["color"].update(enum=["red", "green", "blue", "yellow"]),
    "bounds-loosened": lambda s: (P(s)["replicaCount"].update(minimum=-1, maximum=100), P(s)["name"].update(minLength=0, maxLength=63)),
    "bound-removed": lambda s: P(s)["name"].pop("maxLength"),
    "description-changed": lambda s: P(s)["name"].update(description="What the widget is called."),
    "unchanged": lambda s: None,
}

def write(name, old, new):
    os.makedirs(name, exist_ok=True)
    for file, obj in (("old.yaml", old), ("new.yaml", new)):
        with open(os.path.join(name, file), "w") as f:
            yaml.safe_dump(obj, f, sort_keys=False)

for name, f in cases.items():
    write(name, crd([version("v1alpha1", BASE)]), crd([version("v1alpha1", edit(f))]))

# CRD-wide rules and versions
write("scope-changed", crd([version("v1alpha1", BASE)]), crd([version("v1alpha1", BASE)], scope="Cluster"))
write("stored-version-removed", crd([version("v1alpha1", BASE)]), crd([version("v1beta1", BASE)]))
write("version-added-same-schema", crd([version("v1alpha1", BASE)]),
      crd([version("v1alpha1", BASE, storage=False), version("v1beta1", BASE)]))
write("version-added-field-removed", crd([version("v1alpha1", BASE)]),
      crd([version("v1alpha1", BASE, storage=False), version("v1beta1", edit(cases["field-removed"]))]))
write("unserved-version-differs", crd([version("v1alpha1", BASE)]),
      crd([version("v1alpha1", BASE, storage=False, served=False), version("v1beta1", edit(cases["field-removed"]))]))
