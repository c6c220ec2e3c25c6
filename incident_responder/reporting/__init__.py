"""When an incident has ended (or at any time): the incident as people read it, as text, as a page, delivered.

view      a stored incident gathered from the stores, and as text (``responder show``)
report    one incident as a self-contained HTML page: what it collects, how it renders
sections  the page's sections: diagnosis and evidence, proposal and review, actions and verification, timeline
markup    the page's HTML pieces: escaped text, tables, sections, style
transcript each agent's transcript: the page's section (collapsed turns) and text (``responder show --transcript``)
picture   the state machine with the path an execution took, as SVG
delivery  when an execution ends: the report to S3, a link for operators and the chat channel
"""

from incident_responder.core.exports import lazy_exports

__all__ = ["collect", "deliver", "estimated_cost_usd", "gather", "render_html", "render_svg", "render_text"]
__getattr__ = lazy_exports(
    __name__,
    {
        "view": ["gather", "render_text"],
        "report": ["collect", "estimated_cost_usd", "render_html"],
        "picture": ["render_svg"],
        "delivery": ["deliver"],
    },
)
