"""Dashboard views, one module per page (R-UI): memories, node, sessions."""
