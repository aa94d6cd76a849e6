package chart

// The helpers of package chart's tests, for those of package chart_test
// (chart/pull's, which cannot be in package chart: chart/pull imports it).
var (
	TestChart  = testChart
	ObjectList = objectList
)
