"""Rendering of run records: terminal table, HTML report (`html.render_html`) and Markdown summary (`markdown.render_markdown`). Never measures or compares."""

# The files a run writes into its report folder (the plugin, `perfguard ab` and the workflows read them).
RECORD_NAME = "perfguard.json"
HTML_NAME = "perfguard.html"
MARKDOWN_NAME = "perfguard.md"
