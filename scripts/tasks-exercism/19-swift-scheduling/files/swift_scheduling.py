def delivery_date(start, description):
    pass
