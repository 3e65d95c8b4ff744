"""dialerapi: the lead-intake and callback service of an outbound dialer.

`create_app(config=None)` builds the Flask app; `config` overrides the environment (tests pass
DATABASE_URL, WS_SECRET and JOBS_ENABLED=False). See docs/ and ../shared/spec.

The package's folders are its layers, and imports point down (docs/architecture.md, "How it is built";
tests/test_layers.py holds them with import-linter):

    dialerapi (this app factory), cli, simulate, openapi   wire everything together
    sides/{crm,engine,agent,monitor,supervisor}             one caller's HTTP (and socket) surface each;
                                                            a side never imports another side
    web                                                     what every side's HTTP shares: callers and keys,
                                                            agent tokens, errors, request bodies, shared fields
    upkeep                                                  sweeps and jobs, health, metrics
    rules                                                   the dial-state rules every side shares
    plumbing                                                configuration, clock, database, migrations, limits, AMI
"""

import logging

from flask import Flask
from flask_swagger_ui import get_swaggerui_blueprint
from pythonjsonlogger.json import JsonFormatter

from dialerapi.openapi import routes as docs_routes
from dialerapi.plumbing import config as settings
from dialerapi.plumbing.db import Database
from dialerapi.plumbing.json_provider import OrjsonProvider
from dialerapi.plumbing.limits import TrustedProxyFix, limiter
from dialerapi.sides.agent import routes as agent_routes
from dialerapi.sides.agent.socket import SERVER_OPTIONS, EventHub, decline_compression, sock
from dialerapi.sides.crm import routes as crm_routes
from dialerapi.sides.engine import routes as engine_routes
from dialerapi.sides.monitor import routes as monitor_routes
from dialerapi.sides.supervisor import routes as supervisor_routes
from dialerapi.upkeep import jobs, observability
from dialerapi.upkeep.health import HealthState, recent_logs
from dialerapi.web import auth, errors

MAX_BODY_BYTES = 1024 * 1024


def create_app(config=None):
    """Build the app from D10 settings (environment, .env) overridden by `config`.

    Raises config.ConfigError (one line naming the variable) when a setting is missing or bad.
    """
    app = Flask(__name__, static_folder=None)
    app.config.update(settings.load(config))
    app.config["MAX_CONTENT_LENGTH"] = MAX_BODY_BYTES
    app.json = OrjsonProvider(app)
    if app.config["TRUSTED_PROXY_COUNT"]:
        app.wsgi_app = TrustedProxyFix(app.wsgi_app, app.config["TRUSTED_PROXY_COUNT"], app.config["TRUSTED_PROXIES"])
    _configure_logging(app.config["LOG_LEVEL"])

    app.extensions["dialerapi.db"] = Database(
        app.config["DATABASE_URL"], app.config["DB_POOL_SIZE"], app.config["DB_CAUSAL_READS"], app.config["DB_POOL_MAX"],
        app.config["DB_SEND_BEGIN"])
    app.extensions["dialerapi.health"] = HealthState()
    app.extensions["dialerapi.events"] = EventHub(app)
    app.config.setdefault("SOCK_SERVER_OPTIONS", SERVER_OPTIONS)

    health_state = app.extensions["dialerapi.health"]

    @app.after_request
    def count_response(response):
        health_state.count_response(response.status_code)
        return response

    errors.register(app)
    observability.init_app(app)
    app.before_request(decline_compression)
    app.before_request(auth.require_key)
    limiter.init_app(app)
    for blueprint in (*crm_routes.blueprints, *agent_routes.blueprints, *monitor_routes.blueprints,
                      *supervisor_routes.blueprints,
                      docs_routes.docs_bp, *engine_routes.blueprints):
        app.register_blueprint(blueprint)
    app.register_blueprint(get_swaggerui_blueprint("/docs", "/openapi.json", {"app_name": "dialerapi"}),
                           name="swagger_ui")
    # flask-swagger-ui's view cannot take @public: mark it here, so a browser can open /docs.
    app.view_functions["swagger_ui.show"].public = True
    sock.init_app(app)
    jobs.init_app(app)
    return app


def _configure_logging(level):
    root = logging.getLogger()
    if not root.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(JsonFormatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
        root.addHandler(handler)
    logging.getLogger("dialerapi.access").setLevel(logging.INFO)
    if recent_logs not in root.handlers:
        root.addHandler(recent_logs)
    logging.getLogger("dialerapi").setLevel(level)
