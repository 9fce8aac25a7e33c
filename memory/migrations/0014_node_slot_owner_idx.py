from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('accounts', '0002_team_min_confidence'),
        ('memory', '0013_pinned_instructions'),
    ]

    operations = [
        migrations.AddIndex(
            model_name='node',
            index=models.Index(fields=['team', 'key', 'slot', 'user_id', 'workspace_id'], name='node_slot_owner_idx'),
        ),
    ]
