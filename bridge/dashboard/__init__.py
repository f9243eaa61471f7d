"""The operator's dashboard: one page on the bridge's web server (docs/dashboard.md).

`config` declares `web.dashboard`; `auth` turns the token into a session cookie; `views`
builds the JSON the page shows from the store, the relay and its metrics; `stream` pushes it
over Server-Sent Events; `routes` mounts it all under `/dashboard`.
"""
