"""View models of the web pages, one module per page, built from the services a ``WebService`` holds."""
