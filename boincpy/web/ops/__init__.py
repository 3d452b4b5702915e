"""The ops (admin) pages, html/ops: ``main`` maps each script name to its
page function; ``page`` is the shared context and layout; one module per
group of pages (status, browse, apps, jobs, failures, logs, users, batches,
index)."""
