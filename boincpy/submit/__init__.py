"""Remote job submission: batches, submitters, files by content, and the client.

Keep this file free of imports: ``boincpy.submit.client`` must load on a
scientist's machine without the server's packages.
"""
