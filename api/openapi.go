package api

import _ "embed"

// openAPIDoc is the OpenAPI 3.1 description of every route, served at
// /v1/openapi.json. TestOpenAPIMatchesRoutes keeps it and the router in step.
//
//go:embed openapi.json
var openAPIDoc []byte
