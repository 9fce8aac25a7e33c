"""The controlled schema every new team starts with: the seed's cooking schema (seed 000
受控 Schema, 写入示例). Plain data, so the data migration and team creation use the same rows;
admins edit a team's copy later.
"""

COOKING = "生活技能"
COOKING_PREFIX = ["生活技能", "做饭"]

SCHEMA_RULES = [
    # (domain, category prefix, type, key, value shape, cardinality, default scope, explicit intent, temporary, description)
    (COOKING, COOKING_PREFIX, "preference", "avoid_ingredient", "string", "many", "user", True, False, "不吃或忌口的食材"),
    (COOKING, COOKING_PREFIX, "preference", "limit_ingredient", "object", "many", "user", True, False, "可以少量接受的食材"),
    (COOKING, COOKING_PREFIX, "preference", "preferred_ingredient", "string", "many", "user", True, False, "喜欢的食材"),
    (COOKING, COOKING_PREFIX, "preference", "preferred_cuisine", "string", "many", "user", True, False, "喜欢的菜系"),
    (COOKING, COOKING_PREFIX, "preference", "flavor_profile", "object", "one", "user", True, False, "口味：辣度、油量、咸淡"),
    (COOKING, COOKING_PREFIX, "preference", "dietary_restriction", "string", "many", "user", True, False, "饮食限制"),
    (COOKING, COOKING_PREFIX, "preference", "cooking_time_preference", "string", "one", "user", True, False, "做饭时长"),
    (COOKING, COOKING_PREFIX, "constraint", "allergy", "string", "many", "user", True, False, "过敏的食物"),
    (COOKING, COOKING_PREFIX, "constraint", "flavor_profile", "object", "one", "session", False, True, "临时口味约束"),
    (COOKING, COOKING_PREFIX, "constraint", "health_condition", "string", "one", "session", False, True, "临时身体状况"),
]

# The keys capture gives the user's allergies, home, workplace, occupation and name
# (memory.capture.rules_common KINDS), under the names agents usually write for them: one fact
# keeps one key and one active value whoever writes it (R-STORE). "" is every domain. Words that
# often name something else (city, location, address, company, job) are left out, and so is diet: the
# schema's dietary_restriction holds many values, an agent's diet one. Migration 0029 adds
# these to existing teams.
FACT_SYNONYMS = [
    (COOKING, "allergies", "allergy"), (COOKING, "food_allergy", "allergy"),
    ("", "home_city", "home"), ("", "current_city", "home"), ("", "residence", "home"), ("", "lives_in", "home"),
    ("", "home_address", "home"), ("", "居住地", "home"), ("", "所在城市", "home"),
    ("", "住址", "home"), ("", "家庭住址", "home"),
    ("", "employer", "workplace"), ("", "works_at", "workplace"), ("", "工作单位", "workplace"),
    ("", "job_title", "occupation"), ("", "profession", "occupation"), ("", "职业", "occupation"),
    ("", "user_name", "name"), ("", "full_name", "name"), ("", "姓名", "name"),
]

KEY_SYNONYMS = [
    # (domain, synonym, key)
    (COOKING, "disliked_ingredient", "avoid_ingredient"),
    (COOKING, "avoid_food", "avoid_ingredient"),
    (COOKING, "excluded_ingredient", "avoid_ingredient"),
    (COOKING, "liked_ingredient", "preferred_ingredient"),
    (COOKING, "favorite_cuisine", "preferred_cuisine"),
    (COOKING, "taste", "flavor_profile"),
    (COOKING, "flavor", "flavor_profile"),
] + FACT_SYNONYMS

VALUE_RULES = [
    # (domain, key, pattern, value)
    (COOKING, "flavor_profile", "少辣", {"spicy": "low"}),
    (COOKING, "flavor_profile", "微辣", {"spicy": "low"}),
    (COOKING, "flavor_profile", "不辣", {"spicy": "none"}),
    (COOKING, "flavor_profile", "不要辣", {"spicy": "none"}),
    (COOKING, "flavor_profile", "重辣", {"spicy": "high"}),
    (COOKING, "flavor_profile", "少油", {"oil": "low"}),
    (COOKING, "flavor_profile", "清淡", {"oil": "low", "salt": "low"}),
    (COOKING, "flavor_profile", "少盐", {"salt": "low"}),
    (COOKING, "flavor_profile", "less spicy", {"spicy": "low"}),
    (COOKING, "flavor_profile", "not spicy", {"spicy": "none"}),
    (COOKING, "flavor_profile", "less oil", {"oil": "low"}),
]

CATEGORIES = [
    # (domain, path, description)
    (COOKING, ["生活技能"], "生活技能"),
    (COOKING, ["生活技能", "做饭"], "做饭"),
    (COOKING, ["生活技能", "做饭", "饮食偏好"], "忌口、口味、菜系"),
    (COOKING, ["生活技能", "做饭", "菜谱"], "做过或收藏的菜谱"),
    (COOKING, ["生活技能", "做饭", "厨具"], "家里有的厨具"),
]
