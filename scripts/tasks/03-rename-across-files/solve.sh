sed -i 's/compute_total/order_total/g' shop/*.py
