"""The OpenAPI 3.1 document of every side's HTTP surface (apispec, from the sides' schemas) and its
route, GET /openapi.json. Over the sides: it reads all of them."""
