"""The WSGI application: gunicorn --preload imports it in the master (django.setup() runs the
apps' ready() there), then forks the workers."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bloomsite.settings")
application = get_wsgi_application()
