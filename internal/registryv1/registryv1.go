package registryv1

// Annotations of metadata/annotations.yaml and labels of the bundle image.
const (
	AnnotationMediaType      = "operators.operatorframework.io.bundle.mediatype.v1"
	AnnotationManifests      = "operators.operatorframework.io.bundle.manifests.v1"
	AnnotationMetadata       = "operators.operatorframework.io.bundle.metadata.v1"
	AnnotationPackage        = "operators.operatorframework.io.bundle.package.v1"
	AnnotationChannels       = "operators.operatorframework.io.bundle.channels.v1"
	AnnotationDefaultChannel = "operators.operatorframework.io.bundle.channel.default.v1"
	AnnotationMetricsBuilder = "operators.operatorframework.io.metrics.builder"
	AnnotationMetricsMedia   = "operators.operatorframework.io.metrics.mediatype.v1"
	AnnotationMetricsLayout  = "operators.operatorframework.io.metrics.project_layout"
	AnnotationTestMediaType  = "operators.operatorframework.io.test.mediatype.v1"
	AnnotationTestConfig     = "operators.operatorframework.io.test.config.v1"
)

// Media types of the annotations above.
const (
	MediaTypeRegistryV1  = "registry+v1"
	MediaTypeMetricsV1   = "metrics+v1"
	MediaTypeScorecardV1 = "scorecard+v1"
)

// The bundle's directories and files.
const (
	ManifestsDir        = "manifests"
	MetadataDir         = "metadata"
	ScorecardConfigDir  = "tests/scorecard"
	AnnotationsFile     = MetadataDir + "/annotations.yaml"
	ScorecardConfigFile = ScorecardConfigDir + "/config.yaml"
)
