package gen

// OpenLineage 2-0-2 JSON, written with encoding/json from these structs.
// Field order is struct order; facet maps are written with sorted keys, so
// the bytes are deterministic.

const (
	olProducer       = "https://github.com/OpenLineage/OpenLineage/tree/1.26.0/integration/spark"
	olGlueProducer   = "https://github.com/OpenLineage/OpenLineage/tree/1.26.0/integration/spark/glue"
	olRunSchema      = "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent"
	olJobSchema      = "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/JobEvent"
	olDatasetSchema  = "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/DatasetEvent"
	facetSchemaBase  = "https://openlineage.io/spec/facets/1-0-0/"
	facetSchemaBase1 = "https://openlineage.io/spec/facets/1-1-0/"
	facetSchemaBase2 = "https://openlineage.io/spec/facets/1-2-0/"
)

type facetBase struct {
	Producer  string `json:"_producer"`
	SchemaURL string `json:"_schemaURL"`
}

func fb(producer, schema string) facetBase { return facetBase{Producer: producer, SchemaURL: schema} }

type olRunEvent struct {
	EventTime string      `json:"eventTime"`
	Producer  string      `json:"producer"`
	SchemaURL string      `json:"schemaURL"`
	EventType string      `json:"eventType,omitempty"`
	Run       olRun       `json:"run"`
	Job       olJob       `json:"job"`
	Inputs    []olDataset `json:"inputs"`
	Outputs   []olDataset `json:"outputs"`
}

type olJobEvent struct {
	EventTime string      `json:"eventTime"`
	Producer  string      `json:"producer"`
	SchemaURL string      `json:"schemaURL"`
	Job       olJob       `json:"job"`
	Inputs    []olDataset `json:"inputs"`
	Outputs   []olDataset `json:"outputs"`
}

type olDatasetEvent struct {
	EventTime string    `json:"eventTime"`
	Producer  string    `json:"producer"`
	SchemaURL string    `json:"schemaURL"`
	Dataset   olDataset `json:"dataset"`
}

type olRun struct {
	RunID  string     `json:"runId"`
	Facets *runFacets `json:"facets,omitempty"`
}

type runFacets struct {
	Parent           *parentFacet           `json:"parent,omitempty"`
	ProcessingEngine *processingEngineFacet `json:"processing_engine,omitempty"`
	SparkVersion     *sparkVersionFacet     `json:"spark_version,omitempty"`
	SparkProperties  *sparkPropertiesFacet  `json:"spark_properties,omitempty"`
	ErrorMessage     *errorMessageFacet     `json:"errorMessage,omitempty"`
}

type parentFacet struct {
	facetBase
	Run struct {
		RunID string `json:"runId"`
	} `json:"run"`
	Job struct {
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
	} `json:"job"`
}

type processingEngineFacet struct {
	facetBase
	Version                   string `json:"version"`
	Name                      string `json:"name"`
	OpenlineageAdapterVersion string `json:"openlineageAdapterVersion"`
}

type sparkVersionFacet struct {
	facetBase
	SparkVersion string `json:"spark-version"`
}

type sparkPropertiesFacet struct {
	facetBase
	Properties map[string]string `json:"properties"`
}

type errorMessageFacet struct {
	facetBase
	Message             string `json:"message"`
	ProgrammingLanguage string `json:"programmingLanguage"`
	StackTrace          string `json:"stackTrace,omitempty"`
}

type olJob struct {
	Namespace string     `json:"namespace"`
	Name      string     `json:"name"`
	Facets    *jobFacets `json:"facets,omitempty"`
}

type jobFacets struct {
	JobType *jobTypeFacet `json:"jobType,omitempty"`
	SQL     *sqlFacet     `json:"sql,omitempty"`
}

type jobTypeFacet struct {
	facetBase
	ProcessingType string `json:"processingType"`
	Integration    string `json:"integration"`
	JobType        string `json:"jobType"`
}

type sqlFacet struct {
	facetBase
	Query string `json:"query"`
}

type olDataset struct {
	Namespace    string         `json:"namespace"`
	Name         string         `json:"name"`
	Facets       *datasetFacets `json:"facets,omitempty"`
	OutputFacets *outputFacets  `json:"outputFacets,omitempty"`
	InputFacets  *inputFacets   `json:"inputFacets,omitempty"`
}

type datasetFacets struct {
	DataSource    *dataSourceFacet    `json:"dataSource,omitempty"`
	Schema        *schemaFacet        `json:"schema,omitempty"`
	Symlinks      *symlinksFacet      `json:"symlinks,omitempty"`
	ColumnLineage *columnLineageFacet `json:"columnLineage,omitempty"`
	Lifecycle     *lifecycleFacet     `json:"lifecycleStateChange,omitempty"`
}

type dataSourceFacet struct {
	facetBase
	Name string `json:"name"`
	URI  string `json:"uri"`
}

type schemaFacet struct {
	facetBase
	Fields []field `json:"fields"`
}

type symlinksFacet struct {
	facetBase
	Identifiers []symlink `json:"identifiers"`
}

type symlink struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Type      string `json:"type"`
}

type columnLineageFacet struct {
	facetBase
	Fields map[string]columnInputs `json:"fields"`
}

type columnInputs struct {
	InputFields []inputField `json:"inputFields"`
}

type inputField struct {
	Namespace       string           `json:"namespace"`
	Name            string           `json:"name"`
	Field           string           `json:"field"`
	Transformations []transformation `json:"transformations"`
}

type transformation struct {
	Type    string `json:"type"`
	Subtype string `json:"subtype"`
}

type lifecycleFacet struct {
	facetBase
	LifecycleStateChange string `json:"lifecycleStateChange"`
}

type outputFacets struct {
	OutputStatistics *outputStatisticsFacet `json:"outputStatistics,omitempty"`
}

type outputStatisticsFacet struct {
	facetBase
	RowCount int64 `json:"rowCount"`
	Size     int64 `json:"size"`
}

type inputFacets struct {
	InputStatistics *outputStatisticsFacet `json:"inputStatistics,omitempty"`
}
