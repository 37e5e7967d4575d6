"""Rendering of run records: terminal table, HTML report (`html.render_html`) and Markdown summary (`markdown.render_markdown`). Never measures or compares."""
