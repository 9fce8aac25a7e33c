# Indexes found missing by `make scale` at 1M nodes (docs/performance.md).

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('accounts', '0002_team_min_confidence'),
        ('memory', '0018_heartbeat'),
    ]

    operations = [
        migrations.AddIndex(
            model_name='node',
            index=models.Index(fields=['team', '-id'], name='node_team_recent_idx'),
        ),
        migrations.AddIndex(
            model_name='node',
            index=models.Index(fields=['team', 'status', 'expires_at', 'id'], name='node_team_status_idx'),
        ),
    ]
