"""The Db2 connector: ASN capture-mode change tables polled through ibm_db."""
