sed -i -e 's/8080/9090/' -e 's/true/false/' config.json
