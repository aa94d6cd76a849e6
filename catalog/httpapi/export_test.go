package httpapi

// WriteLargeCatalog is writeLargeCatalog for the external tests.
var WriteLargeCatalog = writeLargeCatalog
