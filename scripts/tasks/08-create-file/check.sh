[ "$(tr -d ' \n\r' < VERSION 2>/dev/null)" = "1.4.2" ]
