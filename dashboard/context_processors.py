def team(request):
    return {"current_team": getattr(request, "team", None), "current_role": getattr(request, "team_role", None)}
