"""The membership study as the core sees it (:class:`copyprobe.studies.Study`): for now its
command (``membership-score``), whose model-config files are validated as model entries
that list the study; it runs no workflow jobs of its own."""

from __future__ import annotations

from copyprobe.studies import Study


class MembershipStudy(Study):
    """Membership scores, their detection against a known truth, and dataset inference."""

    name = "membership"
    schema_file = "data/schema.yaml"
    commands = "copyprobe.membership.commands:add_commands"
    runs_models = True
