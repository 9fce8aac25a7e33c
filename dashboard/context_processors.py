def team(request):
    """The team a dashboard request works in, the user's role there, and the teams they may switch to."""
    return {
        "current_team": getattr(request, "team", None),
        "current_role": getattr(request, "team_role", None),
        "team_choices": getattr(request, "team_choices", ()),
    }
