"""Any model over HTTP, the judge and the application under test alike: providers, the
HTTP machinery, the wire clients, the reply cache and what calls cost."""
