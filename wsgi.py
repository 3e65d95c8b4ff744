"""WSGI entry point for gunicorn: `gunicorn wsgi:app`."""

from dialerapi import create_app

app = create_app()
