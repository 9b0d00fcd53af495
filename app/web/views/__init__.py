"""View models of the web pages, one module per page; ``app.web.service.WebService`` builds them."""
