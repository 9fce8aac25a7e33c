"""Statements about other people are not the user's, and a time after an item is no part of it
(R-EXTRACT). Each case below was stored wrong before: 小明爱吃辣 and Tom不吃鸡肉 as the user's
tastes, 要是陈静对葱过敏 as the user's allergy, "allergic to beef at the moment" as an allergy to
"beef at the moment"."""

import pytest

from tests.memory.capture.test_rules import extract


def said(text: str) -> list[tuple]:
    return [(operation["node"].get("key"), operation["node"]["value_json"]) for operation in extract(text)]


@pytest.mark.parametrize(("text", "expected"), [
    # people in general; 大家 and 所有人 often include the user (大家都爱吃辣，包括我)
    ("很多人不吃香菜", []),
    ("普通人对花生过敏", []),
    ("一般人不吃香菜", []),
    ("有些人对花生过敏", []),
    ("大家都爱吃辣，包括我", [("flavor_profile", {"spicy": "high"})]),
    ("我们家每个人都对花生过敏", [("allergy", "花生")]),
    ("我们都爱吃辣", [("flavor_profile", {"spicy": "high"})]),
    # a name before the verb a flavour's match starts after (爱吃|辣)
    ("小明爱吃辣", []),
    ("王小明不爱吃辣", []),
    ("我爱吃辣", [("flavor_profile", {"spicy": "high"})]),
    ("其实我挺爱吃辣", [("flavor_profile", {"spicy": "high"})]),
    ("平时都爱吃辣", [("flavor_profile", {"spicy": "high"})]),
    # a capitalised Latin name before Chinese
    ("Tom不吃鸡肉", []),
    ("Tom 不吃鸡肉", []),
    ("Lisa爱吃辣", []),
    ("Mary Jane不吃香菜", []),
    ("David是医生", []),
    ("Tom住在北京", []),
    ("Kevin和Lisa都不吃香菜", []),
    # ...only a common first name: not a diet, an adverb, a time, an opener, an interjection, a
    # form of address, a pronoun, nor a food (a review's list)
    ("Halal不吃猪肉", [("avoid_ingredient", "猪肉")]),
    ("Keto不吃碳水", [("avoid_ingredient", "碳水")]),
    ("Lately不吃辣", [("flavor_profile", {"spicy": "none"})]),
    ("Summer不吃辣", [("flavor_profile", {"spicy": "none"})]),
    ("Friday不吃肉", [("avoid_ingredient", "肉")]),
    ("Remember不吃香菜", [("avoid_ingredient", "香菜")]),
    ("Me不吃辣", [("flavor_profile", {"spicy": "none"})]),
    ("Always不吃香菜", [("avoid_ingredient", "香菜")]),
    ("Actually不吃香菜", [("avoid_ingredient", "香菜")]),
    ("Mm不吃香菜", [("avoid_ingredient", "香菜")]),
    ("Bro不吃香菜", [("avoid_ingredient", "香菜")]),
    ("Hi 不吃香菜哦", [("avoid_ingredient", "香菜")]),
    ("Btw我不吃香菜", [("avoid_ingredient", "香菜")]),
    ("Ps: 不要香菜", [("avoid_ingredient", "香菜")]),
    ("OK我住在杭州", [("home", {"lives": "杭州"})]),
    # a name after a supposition's opener
    ("要是陈静对葱过敏", []),
    ("如果小明不吃香菜", []),
])
def test_other_people_are_not_the_user(text, expected):
    assert said(text) == expected


@pytest.mark.parametrize(("text", "item"), [
    ("I'm allergic to beef at the moment", "beef"),
    ("I'm allergic to cats these days", "cats"),
    ("I am allergic to nuts right now, so no pesto", "nuts"),
    ("I'm allergic to penicillin now", "penicillin"),
    ("I'm allergic to dairy at the moment because of meds", "dairy"),
    ("I'm allergic to beef right now so no burgers", "beef"),
])
def test_a_time_after_an_english_item_is_how_long_not_what(text, item):
    [operation] = extract(text)
    assert operation["node"]["value_json"] == item


def test_a_time_that_passes_still_expires():
    [operation] = extract("I'm allergic to beef at the moment")
    assert operation["node"]["title"] == "(for now) User is allergic to beef"
    assert operation["node"]["expires_at"] is not None


@pytest.mark.parametrize(("text", "item"), [
    ("I love Right Now by Van Halen", "Right Now by Van Halen"),
    ("My favorite band is Now Now", "Now Now"),
    ("I love living in the now", "living in the now"),
    ("I like sushi every now and then", "sushi every now and then"),
])
def test_a_time_word_inside_an_item_stays_in_it(text, item):
    [operation] = extract(text)
    assert operation["node"]["value_json"] == item


# A second review's, each lost or misread before.
@pytest.mark.parametrize(("text", "expected"), [
    ("Tom老师不吃辣", []),  # a name with a title after it
    ("Tom哥不吃辣", []),
    ("I'm still allergic to cats", [(None, "cats")]),  # an adverb between "I'm" and "allergic"
    ("I'm mildly allergic to shellfish", [("allergy", "shellfish")]),
    ("I am currently allergic to pollen", [(None, "pollen")]),
    ("I hate cilantro these days", [("avoid_ingredient", "cilantro")]),
    ("我需要你帮我写代码", []),  # a request to the assistant is no task of the user's
    ("提醒我一下，下周一团队会议", []),  # "一下" is no task
    ("提醒我一下明天交报告", [(None, {"task": "明天交报告", "status": "open"})]),
])
def test_a_second_reviews_people_allergies_and_tasks(text, expected):
    assert said(text) == expected


# A third review's: tasks that start with 下 or name whom they are for, and answers or corrections
# said next, which take nothing back.
@pytest.mark.parametrize(("text", "expected"), [
    ("提醒我下午三点开会", [(None, {"task": "下午三点开会", "status": "open"})]),
    ("提醒我给我妈打电话", [(None, {"task": "给我妈打电话", "status": "open"})]),
    ("我需要帮我女儿报名", [(None, {"task": "帮我女儿报名", "status": "open"})]),
    ("我住在上海，不对，浦东", [("home", {"lives": "上海"})]),
    ("我住在杭州，没有", [("home", {"lives": "杭州"})]),
    ("我对花生过敏。不是，我说的是花生酱也不行", [("allergy", "花生")]),
    ("I live in Austin. Never mind, I figured it out", [("home", {"lives": "Austin"})]),
])
def test_a_third_reviews_tasks_and_answers_said_next(text, expected):
    assert said(text) == expected


@pytest.mark.parametrize(("text", "expected"), [
    # the one allergy named beside "no other" (it was a constraint on "除了花生没有任何", or lost)
    ("我除了花生没有任何过敏", [("allergy", "花生")]),
    ("除了花生以外我都不过敏", [("allergy", "花生")]),
    ("我没有任何食物过敏", [("no_allergies", "none")]),
    # a taste that hurts is not wanted (我一吃辣胃就疼 was "prefers spicy")
    ("我一吃辣胃就疼", [("flavor_profile", {"spicy": "none"})]),
    ("我现在要是吃辣，胃就疼", [("flavor_profile", {"spicy": "none"})]),
    ("我喜欢吃辣，头疼的时候除外", [("flavor_profile", {"spicy": "high"})]),
    ("我一吃辣就开心", [("flavor_profile", {"spicy": "high"})]),
    ("我爱吃辣痛快", [("flavor_profile", {"spicy": "high"})]),  # 痛快 is "satisfying"
    ("我可以吃辣，会不舒服但没关系", [("flavor_profile", {"spicy": "high"})]),
    ("我想吃辣，会疼吗", [("flavor_profile", {"spicy": "high"})]),
    # the one named after "no allergies", after a pause
    ("我没有任何过敏，除了花生", [("allergy", "花生")]),
    ("I have no allergies, except shellfish", [("allergy", "shellfish")]),
    ("I don't have any food allergies but I'm vegetarian", [("no_allergies", "none"), ("dietary_restriction", "vegetarian")]),
])
def test_an_allergy_but_for_others_and_a_taste_that_hurts(text, expected):
    assert said(text) == expected


def lasting(text: str) -> list[tuple]:
    return [(operation["node"]["value_json"], operation["node"].get("expires_at") is None) for operation in extract(text)]


@pytest.mark.parametrize(("text", "expected"), [
    # a time word after the sentence turns is about what follows it: the allergy lasted a day before
    ("我对花生过敏，但是今天吃了一点没事", [("花生", True)]),
    ("我对花生过敏，但今天吃了一点没事", [("花生", True)]),
    ("我喜欢吃辣，不过今天胃不舒服", [({"spicy": "high"}, True), ("胃不舒服", False)]),
    ("I'm vegetarian, but tonight I'll make an exception", [("vegetarian", True)]),
    ("I hate mushrooms but right now I'd eat anything", [("mushrooms", True)]),
    ("My favorite color is blue, but today I wore green.", [("blue", True)]),
    # ...and still about its own part
    ("我今天不吃辣，但是明天可以", [({"spicy": "none"}, False)]),
    ("我今天很累，不想吃辣", [({"spicy": "none"}, False)]),
    ("Today I don't want spicy food, I'm tired", [({"spicy": "none"}, False)]),
    ("I'm fine today but I don't eat spicy food", [("spicy food", True)]),
])
def test_a_time_word_says_how_long_only_its_own_part_of_the_sentence_lasts(text, expected):
    assert lasting(text) == expected


@pytest.mark.parametrize(("text", "expected"), [
    # how the favorite is or what it does, not which it is: each was stored as its new value
    ("My favorite team is losing.", []),
    ("My favorite team is playing tonight.", []),
    ("My favorite team is winning again", []),
    ("My favorite restaurant is closed today.", []),
    ("My favorite player is injured.", []),
    ("My favorite food is amazing.", []),
    ("My favorite show is on tonight.", []),
    ("My favorite band is back!", []),
    ("My favorite singer is touring Europe.", []),
    ("My favorite movie is the best.", []),
    ("My favorite song is the latest one", []),
    ("我最喜欢的球队是不是输了", []),
    ("我最喜欢的球队是否赢了", []),
    ("我最喜欢的餐厅是关门了", []),
    ("我最喜欢的歌是很好听", []),
    ("我最喜欢的电影是最好的", []),
    ("我最喜欢的球员是在比赛", []),
    # which it is: an activity, a thing named with "the", a title in capitals, a noun in -ing or -ed
    ("My favorite hobby is painting.", [("favorite_hobby", "painting")]),
    ("My favorite part is cooking with friends", [("favorite_part", "cooking with friends")]),
    ("My favorite team is the Lakers.", [("favorite_team", "the Lakers")]),
    ("My favorite book is The Shining.", [("favorite_book", "The Shining")]),
    ("My favorite movie is The Greatest Showman", [("favorite_movie", "The Greatest Showman")]),
    ("My favorite place is the forest", [("favorite_place", "the forest")]),
    ("My favorite show is Breaking Bad.", [("favorite_show", "Breaking Bad")]),
    ("My favorite movie is Up", [("favorite_movie", "Up")]),
    ("My favorite season is spring", [("favorite_season", "spring")]),
    ("My favorite dessert is pudding", [("favorite_dessert", "pudding")]),
    ("My favorite dish is fried chicken", [("favorite_dish", "fried chicken")]),
    ("我最喜欢的颜色是红色的", [("favorite_color", "红色")]),
    ("我最喜欢的运动是游泳", [("favorite_sport", "游泳")]),
])
def test_a_favorite_is_which_one_not_how_it_is(text, expected):
    assert said(text) == expected
