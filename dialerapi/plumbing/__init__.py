"""The plumbing under every layer: configuration (D10), the service's one clock (D2), the database
(connections, one transaction(), named queries in sql/, migrations), rate limits, the socket hosts'
capacity rows, the AMI client and the JSON provider.

Imports nothing of dialerapi outside this folder.
"""
