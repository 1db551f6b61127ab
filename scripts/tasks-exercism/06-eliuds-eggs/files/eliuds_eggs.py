def egg_count(display_value):
    pass
